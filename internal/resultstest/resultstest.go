// Package resultstest builds the runs the tests of the results packages
// and of the report share: a fleet's transitions, a sparse timeline, a
// restart of ten clients and everything a run records around it.
package resultstest

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/results/track"
	"github.com/stampede-dev/stampede/spec"
)

// Seconds prints a summary's optional time for a test's message: "never"
// when it is null.
func Seconds(s *float64) string {
	if s == nil {
		return "never"
	}
	return fmt.Sprintf("%.3f s", *s)
}

// Ms is a shorthand for offsets: n milliseconds.
func Ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// UpAt is client c's connect at at.
func UpAt(c uint32, at time.Duration) results.Transition {
	return results.Transition{Client: c, At: at, Up: true}
}

// DownAt is client c's drop at at.
func DownAt(c uint32, at time.Duration) results.Transition {
	return results.Transition{Client: c, At: at}
}

// F, U32 and U64 return pointers, for the nullable figures.
func F(v float64) *float64 { return &v }

// U32 returns a pointer to v.
func U32(v uint32) *uint32 { return &v }

// U64 returns a pointer to v.
func U64(v uint64) *uint64 { return &v }

// Tick describes one timeline bucket by index.
type Tick struct {
	I                int
	Attempts, Succ   uint32
	Refused, Timeout uint32
	Closed1006       uint32
}

// Timeline builds a Timeline from sparse bucket descriptions.
func Timeline(ticks ...Tick) results.Timeline {
	var tl results.Timeline
	for _, k := range ticks {
		b := tl.At(time.Duration(k.I) * results.Tick)
		b.Attempts += k.Attempts
		b.Successes += k.Succ
		b.Failures[connerr.Refused] += k.Refused
		b.Failures[connerr.Timeout] += k.Timeout
		b.Disconnects[connerr.Closed1006] += k.Closed1006
	}
	return tl
}

// RestartTen is a restart of a fleet of 10: all up at 0.05 s, all dropped
// at 1.000-1.009 s, target ready at 3 s, back one by one until 8 s.
func RestartTen() (*results.Report, []results.Event) {
	r := results.NewReport(time.Time{}, 10)
	back := []int{3050, 3150, 3250, 3350, 3450, 4050, 4550, 5050, 6050, 8000}
	for c := range uint32(10) {
		r.Transitions = append(r.Transitions,
			UpAt(c, Ms(50)), DownAt(c, Ms(1000+int(c))), UpAt(c, Ms(back[c])))
	}
	slices.Reverse(r.Transitions) // any order: Recoveries sorts
	r.Timeline = Timeline(
		Tick{I: 0, Attempts: 10, Succ: 10}, // initial connects, before the event
		Tick{I: 10, Closed1006: 10},        // the drop
		Tick{I: 20, Attempts: 10, Refused: 10},
		Tick{I: 25, Attempts: 4, Refused: 4},
		// Herd window: buckets 30..80 (ready at 3.0 s, last back at 8.0 s).
		Tick{I: 30, Attempts: 10, Succ: 1, Timeout: 9},
		Tick{I: 31, Attempts: 9, Succ: 1, Timeout: 8},
		Tick{I: 32, Attempts: 8, Succ: 1, Timeout: 7},
		Tick{I: 33, Attempts: 7, Succ: 1, Timeout: 6},
		Tick{I: 34, Attempts: 6, Succ: 1, Timeout: 5},
		Tick{I: 40, Attempts: 5, Succ: 1, Timeout: 4},
		Tick{I: 45, Attempts: 4, Succ: 1, Timeout: 3},
		Tick{I: 50, Attempts: 3, Succ: 1, Timeout: 2},
		Tick{I: 60, Attempts: 2, Succ: 1, Timeout: 1},
		Tick{I: 80, Attempts: 1, Succ: 1},
		Tick{I: 90, Attempts: 3, Refused: 3}, // after recovery: not wasted
	)
	return r, []results.Event{{Kind: "restart", Mode: "abrupt", Start: Ms(1000), End: Ms(2900), Ready: Ms(3000)}}
}

// SummaryInput is RestartTen with everything else a run records.
func SummaryInput() summary.Input {
	r, events := RestartTen()
	results.RecordLatency(r.Connect, 1500*time.Microsecond)
	results.RecordLatency(r.TTR, 2*time.Second)
	r.Messages = results.Messages{Sent: 20, Acked: 20, Resumed: 10, Delivered: 180}
	r.Track = &track.Record{} // the message protocol ran: deliveries checked
	r.Stopped = map[string]results.Stopped{"tls": {Count: 1, LastError: "x509: certificate signed by unknown authority"}}
	// A backlog change at 0.5 s, given after the restart: Summarize orders
	// events by Start, so it becomes event 0.
	events = append(events, results.Event{Kind: "backlog", Spec: "at 500ms backlog 16", Start: 500 * time.Millisecond})
	return summary.Input{
		RunID:  "2026-11-29T12-00-00Z-002a",
		Seed:   42,
		Config: map[string]any{"clients": 10, "policy": "fixed:initial=1s"},
		// The spec's secrets (a token, the URL's and the store's
		// passwords) are recorded redacted.
		Spec: &spec.Run{Kind: spec.KindRun, Duration: 10 * time.Second, Chaos: "at 1s restart abrupt down=2s",
			Client: &spec.Client{URL: "ws://user:hunter2@127.0.0.1:9000/", Clients: 10, Policy: backoff.MustParse("fixed:initial=1s"),
				Header: http.Header{"Authorization": {"Bearer hunter2"}, "X-Team": {"blue"}}},
			Server: &spec.Server{Backlog: 128, Procs: 1, Store: "redis://app:hunter2@127.0.0.1:6379/0"}},
		Report:     r,
		Events:     events,
		End:        10 * time.Second,
		Kernel:     results.KernelDelta{ListenOverflows: 249, ListenDrops: 249, TCPSynRetrans: 249},
		KernelRead: true,
		Resources: map[string]results.ResourceStats{
			results.RoleLoadgen: {PeakRSSBytes: 1 << 20, CPUSeconds: 1.5, PeakFDs: 14, PeakThreads: 6, Processes: 1, ProcessesSeen: 1, Samples: 10},
		},
	}
}

// Fleet is n clients connected at 0.
func Fleet(n int) []results.Transition {
	var trs []results.Transition
	for c := range uint32(n) {
		trs = append(trs, UpAt(c, 0))
	}
	return trs
}

// Concat joins lists of transitions.
func Concat(parts ...[]results.Transition) []results.Transition {
	var out []results.Transition
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ShowAll prints recoveries with every pointer as its value (or null), so
// that values, not addresses, are compared and a mismatch reads.
func ShowAll(rs []summary.Recovery) string {
	var b strings.Builder
	for _, r := range rs {
		v := reflect.ValueOf(r)
		for i := range v.NumField() {
			fv := v.Field(i)
			s := "null"
			if fv.Kind() != reflect.Pointer {
				s = fmt.Sprint(fv.Interface())
			} else if !fv.IsNil() {
				s = fmt.Sprint(fv.Elem().Interface())
			}
			fmt.Fprintf(&b, "%s=%s ", v.Type().Field(i).Name, s)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// DropAll drops clients 0..n-1 every step from at, and brings each back
// after back.
func DropAll(n int, at, step, back time.Duration) []results.Transition {
	var trs []results.Transition
	for c := range uint32(n) {
		d := at + time.Duration(c)*step
		trs = append(trs, DownAt(c, d), UpAt(c, d+back))
	}
	return trs
}
