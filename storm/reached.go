package storm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// UnreachableError is returned with a Result when the run tested nothing:
// no client of the fleet ever connected, or every client stopped on a
// failure that retrying cannot fix (a 4xx answer, a rejected
// certificate). The folder is written; summary.json has a failing check
// "fleet" and "pass": false, whatever the SLOs say.
type UnreachableError struct {
	// Reason says what happened, in one line.
	Reason string
	// GaveUp is true when the fleet reached the server but every client
	// then gave up (its policy out of attempts, or a failure retrying
	// cannot fix): the run ended with nobody connected.
	GaveUp bool
}

func (e *UnreachableError) Error() string {
	if e.GaveUp {
		return "gave up: " + e.Reason
	}
	return "unreachable: " + e.Reason
}

// fleetCheckName names the check a run that tested nothing fails.
const fleetCheckName = "fleet"

// unreached returns why the fleet of sum never reached its server, or ""
// when it did. where names the server.
func unreached(sum *summary.Summary, where string) string {
	stopped, fatal := 0, len(sum.Stopped) > 0
	var lasts, why []string // each class's last error, and with its count
	for _, class := range slices.Sorted(maps.Keys(sum.Stopped)) {
		st := sum.Stopped[class]
		stopped += st.Count
		if class != connerr.TLS.String() && class != connerr.Handshake4xx.String() {
			fatal = false
		}
		last := st.LastError
		if last == "" {
			last = class
		}
		if class == results.AttemptsExhausted {
			last = "out of attempts, the last failing with " + last
		}
		lasts, why = append(lasts, last), append(why, fmt.Sprintf("%d %s", st.Count, last))
	}
	switch {
	case stopped >= sum.Clients && sum.Connect.Successes > 0 && sum.Stopped[results.AttemptsExhausted].Count > 0:
		return fmt.Sprintf("%s: all %d clients gave up, none connected at the end: %s", where, stopped, strings.Join(why, "; "))
	case fatal && stopped >= sum.Clients && len(lasts) == 1:
		return fmt.Sprintf("%s: all %d clients stopped on %s, which retrying cannot fix", where, stopped, lasts[0])
	case fatal && stopped >= sum.Clients:
		return fmt.Sprintf("%s: all %d clients stopped on failures retrying cannot fix: %s", where, stopped, strings.Join(why, "; "))
	case sum.Connect.Successes == 0 && sum.Connect.Attempts == 0:
		return fmt.Sprintf("%s: no client of %d connected in %.1fs; none made an attempt", where, sum.Clients, sum.DurationS)
	case sum.Connect.Successes == 0:
		return fmt.Sprintf("%s: no client of %d connected in %.1fs; %s", where, sum.Clients, sum.DurationS, failureText(sum.Connect))
	}
	return ""
}

// failureText says how a fleet's attempts ended, none connected: "all 25
// attempts ended refused", "25 attempts: refused 20, timeout 5", "none of
// 20 attempts completed" (every one still in flight at the end).
func failureText(c summary.Connect) string {
	var parts []string
	var only string
	var failed uint64
	for _, class := range connerr.Classes() {
		if n := c.Failures[class.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", class, n))
			only, failed = class.String(), failed+n
		}
	}
	switch {
	case failed == 0:
		return fmt.Sprintf("none of %d attempts completed", c.Attempts)
	case len(parts) == 1 && failed >= c.Attempts:
		return fmt.Sprintf("all %d attempts ended %s", c.Attempts, only)
	case failed < c.Attempts:
		parts = append(parts, fmt.Sprintf("unfinished %d", c.Attempts-failed))
	}
	return fmt.Sprintf("%d attempts: %s", c.Attempts, strings.Join(parts, ", "))
}

// checkReached fails the run's "fleet" check when its fleet never reached
// the server, and returns the error that says so; nil when it did.
func (r *run) checkReached(sum *summary.Summary) error {
	where := "the target"
	if r.cfg.external() {
		where = redact.URL(r.cfg.Fleet.URL)
	}
	reason := unreached(sum, where)
	if reason == "" {
		return nil
	}
	sum.AddChecks(summary.Check{Name: fleetCheckName, Pass: false, Detail: reason})
	return &UnreachableError{Reason: reason, GaveUp: sum.Connect.Successes > 0}
}
