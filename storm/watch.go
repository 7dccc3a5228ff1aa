package storm

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// agentWatch hears what the agents report besides their results while a
// run goes on: progress for the status line, processes that exited when
// nothing scheduled it (crashes), agents lost. It is the coordinator's
// OnProgress, OnEvent and OnLost.
type agentWatch struct {
	logf func(string, ...any)

	mu         sync.Mutex
	start      time.Time       // the start barrier, once sent
	crashes    []results.Event // "crash" events, in the order heard
	lostAgents int
	aborted    bool // --on-agent-loss fail stopped the run
	allStopped bool // every client stopped: the run ended early
}

// watchAgents sets co's callbacks: progress goes to p, crashes and lost
// agents are logged and kept; with LossFail a lost agent stops the run.
//
// When every client of the fleet (clients) has stopped there is nothing
// left to wait for: the run ends then, as ctx ending does.
func watchAgents(co *cluster.Coordinator, p *Progress, clients int, onLoss string, logf func(string, ...any)) *agentWatch {
	w := &agentWatch{logf: logf}
	co.OnProgress = func(a *cluster.Agent, pr agent.Progress) {
		if a.Plan.Role != agent.RoleLoadgen {
			return
		}
		p.Update(a.Index(), pr)
		if t := p.Total(); t.StoppedCount() >= uint64(clients) && w.stopAll() {
			logf("loadgen: all %d client(s) stopped (%s); ending the run", clients, stoppedText(&t))
			co.Abort()
		}
	}
	co.OnEvent = w.crash
	co.OnLost = func(a *cluster.Agent, err error) {
		w.lost(a, err)
		if onLoss == LossFail {
			logf("lost: the run fails when an agent is lost: stopping the run")
			w.mu.Lock()
			w.aborted = true
			w.mu.Unlock()
			co.Abort()
		}
	}
	return w
}

// started records the start barrier: crashes and losses are timed from it.
func (w *agentWatch) started(at time.Time) {
	w.mu.Lock()
	w.start = at
	w.mu.Unlock()
}

// crash records a process that exited when nothing scheduled it.
func (w *agentWatch) crash(a *cluster.Agent, e agent.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := time.Duration(0)
	if !w.start.IsZero() {
		at = e.At.Sub(w.start)
	}
	w.logf("crash: %s process %d exited (%s) at %.3fs; nothing scheduled it", e.Role, e.PID, e.Exit, at.Seconds())
	w.crashes = append(w.crashes, results.Event{Kind: e.Kind, Mode: string(e.Role), Start: at, Role: string(e.Role), PID: e.PID, Exit: e.Exit})
}

// lost records and logs an agent lost.
func (w *agentWatch) lost(a *cluster.Agent, err error) {
	w.mu.Lock()
	w.lostAgents++
	at := time.Duration(0)
	if !w.start.IsZero() {
		at = time.Since(w.start)
	}
	w.mu.Unlock()
	clients := 0
	if a.Plan.Loadgen != nil {
		clients = a.Plan.Loadgen.Clients
	}
	w.logf("lost: agent %s (%s, %d client(s)) at %.3fs, unix %.3f: %v", a.Name, a.Plan.Role, clients, at.Seconds(),
		float64(time.Now().UnixMilli())/1000, err)
}

// stopAll marks the run as ended because every client stopped; false
// when it already was.
func (w *agentWatch) stopAll() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.allStopped {
		return false
	}
	w.allStopped = true
	return true
}

// stoppedText names the classes clients stopped on: "handshake_4xx 10".
func stoppedText(s *loadgen.Stats) string {
	var parts []string
	for _, c := range connerr.Classes() {
		if n := s.Stopped[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// outcome returns what the watch saw by the run's end.
func (w *agentWatch) outcome() (crashes []results.Event, lostAgents int, aborted, allStopped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]results.Event(nil), w.crashes...), w.lostAgents, w.aborted, w.allStopped
}
