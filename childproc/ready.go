package childproc

import (
	"encoding/json"
	"io"
	"time"
)

// ReadyLine is the one JSON line a stampede server or relay process (`stampede
// target`, `stampede proxy`, or a group's member started by Start) prints
// on stdout once it accepts, for its parent or a supervisor to parse:
//
//	{"ready":true,"addr":"127.0.0.1:PORT","pid":N,"control":"127.0.0.1:CPORT","token":"HEX","t":"RFC3339Nano"}
//
// A process running a group adds "children", one ReadyLine per child
// process. docs/agent.md has the wire format.
type ReadyLine struct {
	// Ready is true: Start skips lines without it.
	Ready bool `json:"ready"`
	// Addr is the listen address.
	Addr string `json:"addr"`
	// PID is the process id.
	PID int `json:"pid"`
	// Control is the host:port of the process's HTTP control API.
	Control string `json:"control"`
	// Token is what a request to the control API must carry, as
	// "Authorization: Bearer TOKEN" (docs/cli.md, "Control API").
	Token string `json:"token"`
	// T is when the process started accepting (a group: when the last
	// child did).
	T time.Time `json:"t"`
	// Children are the ready lines of a group's processes.
	Children []ReadyLine `json:"children,omitempty"`
}

// WriteReady writes line to w as one JSON line: the child's side of
// Start's wait.
func WriteReady(w io.Writer, line ReadyLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
