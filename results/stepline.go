package results

import (
	"strings"
	"time"
)

// StepLinePrefix starts a line a deploy command (a drill's --restart-cmd)
// prints for each of its steps (docs/loadbalancer.md, "Step lines"):
//
//	stampede-event: KIND NAME TIME [DETAIL]
const StepLinePrefix = "stampede-event: "

// StepLine is one parsed step line of a deploy command.
type StepLine struct {
	// Kind is what happened: deploy-start, drain, restart, up, ready,
	// deploy-end, or any word the command chose.
	Kind string
	// Name is what it happened to: a backend (s1) or "deploy".
	Name string
	// At is when, as the command said it (UTC).
	At time.Time
	// Detail is the rest of the line, free text; may be empty.
	Detail string
}

// ParseStepLine parses a step line; ok is false for any other line (the
// command's ordinary output), including a step line whose time is not
// RFC 3339.
func ParseStepLine(line string) (s StepLine, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimRight(line, "\r\n"), StepLinePrefix)
	if !found {
		return s, false
	}
	f := strings.SplitN(rest, " ", 4)
	if len(f) < 3 || f[0] == "" || f[1] == "" {
		return s, false
	}
	at, err := time.Parse(time.RFC3339Nano, f[2])
	if err != nil {
		return s, false
	}
	s = StepLine{Kind: f[0], Name: f[1], At: at.UTC()}
	if len(f) == 4 {
		s.Detail = f[3]
	}
	return s, true
}
