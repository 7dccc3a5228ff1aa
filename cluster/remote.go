package cluster

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/tlsconf"
)

// RemoteTarget is the supervisor.Target of a target group run by an agent: the
// supervisor's requests travel as control messages (also a
// supervisor.StepRestarter and supervisor.RetryCounter).
type RemoteTarget struct {
	agent *Agent

	mu      sync.Mutex
	backlog int
	rate    float64 // the group's
}

// NewRemoteTarget returns the target run by a, a placed agent of role
// target.
func NewRemoteTarget(a *Agent) *RemoteTarget {
	tp := a.Plan.Target
	return &RemoteTarget{agent: a, backlog: tp.Config.Server.WithDefaults().Backlog, rate: tp.Config.AcceptRate * float64(max(1, tp.Procs))}
}

// URL returns the group's ws:// or wss:// URL.
func (t *RemoteTarget) URL() string { return t.agent.Ready.URL }

// Restart is RestartSteps without the steps.
func (t *RemoteTarget) Restart(ctx context.Context, ev chaos.Event) (listening, ready time.Time, err error) {
	r, err := t.RestartSteps(ctx, ev)
	return r.Listening, r.Ready, err
}

// RestartSteps restarts the group as ev says and reports each step.
func (t *RemoteTarget) RestartSteps(ctx context.Context, ev chaos.Event) (supervisor.Restarted, error) {
	r, err := t.agent.Call(ctx, agent.Control{Op: agent.OpRestart, Restart: &ev})
	if r.Restarted == nil {
		return supervisor.Restarted{}, err
	}
	return *r.Restarted, err
}

// Stall stops the group accepting for d.
func (t *RemoteTarget) Stall(ctx context.Context, d time.Duration) error {
	_, err := t.agent.Call(ctx, agent.Control{Op: agent.OpStall, For: d})
	return err
}

// SetBacklog changes every process's listen backlog.
func (t *RemoteTarget) SetBacklog(ctx context.Context, n int) error {
	if _, err := t.agent.Call(ctx, agent.Control{Op: agent.OpBacklog, Backlog: n}); err != nil {
		return err
	}
	t.mu.Lock()
	t.backlog = n
	t.mu.Unlock()
	return nil
}

// SetAcceptRate changes the group's accept rate (0: unlimited).
func (t *RemoteTarget) SetAcceptRate(ctx context.Context, perSecond float64) error {
	if _, err := t.agent.Call(ctx, agent.Control{Op: agent.OpAcceptRate, Rate: perSecond}); err != nil {
		return err
	}
	t.mu.Lock()
	t.rate = perSecond
	t.mu.Unlock()
	return nil
}

// Reject answers upgrades with status and Retry-After for d.
func (t *RemoteTarget) Reject(ctx context.Context, status int, retryAfter, d time.Duration) error {
	_, err := t.agent.Call(ctx, agent.Control{Op: agent.OpReject, Status: status, RetryAfter: retryAfter, For: d})
	return err
}

// EarlyRetries returns each process's early-retry counter by PID.
func (t *RemoteTarget) EarlyRetries(ctx context.Context) (map[int]uint64, error) {
	r, err := t.agent.Call(ctx, agent.Control{Op: agent.OpEarlyRetries})
	return r.EarlyRetries, err
}

// TLSHandshakes returns a wss:// group's TLS handshakes so far, every
// process it had summed; nil for ws://.
func (t *RemoteTarget) TLSHandshakes(ctx context.Context) (*tlsconf.Stats, error) {
	r, err := t.agent.Call(ctx, agent.Control{Op: agent.OpTLS})
	return r.TLS, err
}

// Stats returns the target's counters summed over its running processes.
func (t *RemoteTarget) Stats(ctx context.Context) (target.Stats, error) {
	r, err := t.agent.Call(ctx, agent.Control{Op: agent.OpStats})
	if err != nil || r.Stats == nil {
		return target.Stats{}, err
	}
	return *r.Stats, nil
}

// Backlog returns the current listen backlog.
func (t *RemoteTarget) Backlog() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.backlog
}

// AcceptRate returns the group's current accept rate.
func (t *RemoteTarget) AcceptRate() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// RemoteProxy is the supervisor.Proxy of a fault proxy group run by an agent.
type RemoteProxy struct {
	agent *Agent
	// Log, if set, is told when a fault set could not be applied.
	Log func(format string, args ...any)
}

// NewRemoteProxy returns the proxy run by a, a placed agent of role proxy.
func NewRemoteProxy(a *Agent, log func(format string, args ...any)) *RemoteProxy {
	return &RemoteProxy{agent: a, Log: log}
}

// Set switches the fault set f on in every process (the zero set: all
// off), giving up after 5 s.
func (p *RemoteProxy) Set(f fault.Set) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.agent.Call(ctx, agent.Control{Op: agent.OpProxyFault, Fault: &f}); err != nil && p.Log != nil {
		p.Log("proxy: %v", err)
	}
}

// URLFor returns rawURL with its host:port replaced by the proxy's
// address, so clients go through the proxy.
func (p *RemoteProxy) URLFor(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = p.agent.Ready.Addr
	return u.String()
}
