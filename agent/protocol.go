// Package agent runs one role of a storm from a typed plan: a loadgen
// share (a range of client IDs), a target group (its processes, restarts
// and store), a fault proxy group, or one process of a group; and it holds
// the protocol an agent and its coordinator (package cluster) speak.
// Locally an agent is a child process (`stampede agent`, or the lean
// stampede-worker for loadgen shares) spoken to over its stdin and stdout
// (ServeStdio); on another host it is served over the NATS hub (Roles).
// The same messages can travel over any Transport. docs/agent.md is the
// protocol's contract. agent imports no coordinator.
//
//	coordinator                              agent
//	     │ ── plan (role, typed config) ──────>  │ validate, start the role
//	     │ <─ ready (host, pid, addr, pids) ───  │
//	     │ ── start (absolute instant) ───────>  │ loadgen: wait for it, run
//	     │ <─ progress (every second) ─────────  │ counters, processes
//	     │ ── control (restart, stall, ...) ──>  │ target, proxy: apply it
//	     │ <─ reply (same id) ─────────────────  │
//	     │ <─ event (crash: nobody scheduled) ─  │
//	     │ ── stop ───────────────────────────>  │ (or the planned duration ends)
//	     │ <─ final (histograms, ...) ─────────  │ then the agent exits
//
// Every message carries the protocol version; an agent refuses a plan of
// another version. Histograms travel in HdrHistogram's own encoding and
// are merged, never averaged. The start barrier is an absolute wall-clock
// instant, so every agent's offsets share one time axis.
package agent

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/tlsconf"
)

// Version is the protocol version every message carries.
const Version = 1

// Role is what an agent runs.
type Role string

// The roles. Loadgen, target and proxy are what a coordinator places;
// server and relay are one process of a target or proxy group, started by
// that group's agent, answering with a childproc.ReadyLine on stdout and
// controlled over its HTTP control API.
const (
	RoleLoadgen Role = "loadgen"
	RoleTarget  Role = "target"
	RoleProxy   Role = "proxy"
	RoleServer  Role = "server"
	RoleRelay   Role = "relay"
)

// Kind names a protocol message.
type Kind string

// The messages, in the order a healthy exchange sends them.
const (
	KindPlan     Kind = "plan"     // coordinator -> agent
	KindReady    Kind = "ready"    // agent -> coordinator
	KindStart    Kind = "start"    // coordinator -> agent
	KindProgress Kind = "progress" // agent -> coordinator
	KindControl  Kind = "control"  // coordinator -> agent (target, proxy)
	KindReply    Kind = "reply"    // agent -> coordinator
	KindEvent    Kind = "event"    // agent -> coordinator: something nobody scheduled
	KindResults  Kind = "results"  // agent -> coordinator: a bounded piece of a loadgen's results
	KindStop     Kind = "stop"     // coordinator -> agent
	KindFinal    Kind = "final"    // agent -> coordinator
	KindRecover  Kind = "recover"  // coordinator -> loadgen agent: the run's events
	KindRecovery Kind = "recovery" // loadgen agent -> coordinator: its recovery partials
	KindError    Kind = "error"    // agent -> coordinator: the agent failed
)

// Message is one protocol message; the field named by Kind is set.
type Message struct {
	// V is the protocol version (Version).
	V    int  `json:"v"`
	Kind Kind `json:"kind"`
	// Agent is the agent's index in the run.
	Agent    int            `json:"agent"`
	Plan     *Plan          `json:"plan,omitempty"`
	Ready    *Ready         `json:"ready,omitempty"`
	Start    *Start         `json:"start,omitempty"`
	Progress *Progress      `json:"progress,omitempty"`
	Control  *Control       `json:"control,omitempty"`
	Reply    *Reply         `json:"reply,omitempty"`
	Event    *Event         `json:"event,omitempty"`
	Piece    *results.Piece `json:"piece,omitempty"`
	Final    *Final         `json:"final,omitempty"`
	Recover  *Recover       `json:"recover,omitempty"`
	Recovery *Recovery      `json:"recovery,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// Plan is what one agent runs: its role and that role's typed
// configuration, exactly one of Loadgen, Target, Proxy, Server, Relay.
type Plan struct {
	// RunID names the run.
	RunID string `json:"run_id"`
	// Role says which configuration is set.
	Role Role `json:"role"`
	// Name names the agent in logs and results.
	Name string `json:"name,omitempty"`
	// Loadgen is a share of the fleet; its FirstID and Clients are the
	// agent's client IDs, its Start is set by the Start message.
	Loadgen *loadgen.Config `json:"loadgen,omitempty"`
	// Target is a target group.
	Target *TargetPlan `json:"target,omitempty"`
	// Proxy is a fault proxy group.
	Proxy *ProxyPlan `json:"proxy,omitempty"`
	// Server is one process of a target group.
	Server *target.Config `json:"server,omitempty"`
	// Relay is one process of a proxy group.
	Relay *proxy.Config `json:"relay,omitempty"`
	// Allow is the coordinator's allow list: the hosts and address
	// prefixes beyond loopback and NamespaceHosts its load may go to. An
	// agent joined over NATS refuses a plan whose load goes elsewhere, or
	// where its own list does not allow (CheckPlanLoad).
	Allow []string `json:"allow,omitempty"`
}

// TargetPlan is a target group: Procs processes of Config on one port.
type TargetPlan struct {
	// Config is every process's configuration. An empty Addr means a free
	// loopback port outside the ephemeral range (listener.FreePort); its
	// AcceptRate is per process.
	Config target.Config `json:"config"`
	// Procs is the size of the SO_REUSEPORT group (at least 1).
	Procs int `json:"procs"`
}

// ProxyPlan is a fault proxy group of Procs processes.
type ProxyPlan struct {
	// Config is every process's configuration. An empty Listen means a
	// free loopback port outside the ephemeral range.
	Config proxy.Config `json:"config"`
	// Procs is the number of processes (at least 1).
	Procs int `json:"procs"`
	// SourceIPs give process i the upstream source address
	// SourceIPs[i % len].
	SourceIPs []netip.Addr `json:"source_ips,omitempty"`
}

// Validate checks that the plan names a known role and carries its
// configuration, and that configuration.
func (p *Plan) Validate() error {
	set := 0
	for _, ok := range []bool{p.Loadgen != nil, p.Target != nil, p.Proxy != nil, p.Server != nil, p.Relay != nil} {
		if ok {
			set++
		}
	}
	var ok bool
	var err error
	switch p.Role {
	case RoleLoadgen:
		ok = p.Loadgen != nil
		if ok {
			err = p.Loadgen.Validate()
		}
	case RoleTarget:
		ok = p.Target != nil
		if ok {
			err = p.Target.Config.Validate()
		}
	case RoleProxy:
		ok = p.Proxy != nil
		if ok {
			err = p.Proxy.Config.Validate()
		}
	case RoleServer:
		ok = p.Server != nil
		if ok {
			err = p.Server.Validate()
		}
	case RoleRelay:
		ok = p.Relay != nil
		if ok {
			err = p.Relay.Validate()
		}
	default:
		return fmt.Errorf("agent: plan of unknown role %q", p.Role)
	}
	if !ok || set != 1 {
		return fmt.Errorf("agent: a %s plan must carry its %s configuration and no other", p.Role, p.Role)
	}
	return err
}

// Ready says an agent accepted its plan and its role is running.
type Ready struct {
	// Host is the agent's host name.
	Host string `json:"host"`
	// PID is the agent's process ID.
	PID int `json:"pid"`
	// Addr is where a target or proxy group listens ("IP:PORT").
	Addr string `json:"addr,omitempty"`
	// URL is a target group's ws:// or wss:// URL.
	URL string `json:"url,omitempty"`
	// PIDs are the processes of a target or proxy group, for resource
	// sampling.
	PIDs []int `json:"pids,omitempty"`
	// HostStats are the figures of the agent's host when it said ready
	// (set by an agent on another host, docs/fleet.md "Figures of each
	// host"); nil from an agent of the coordinator's machine.
	HostStats *HostStats `json:"host_stats,omitempty"`
}

// Start is the barrier: every agent begins at At (wall clock) and a
// loadgen runs for Duration unless stopped sooner.
type Start struct {
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"duration"`
}

// Progress is an agent's live state.
type Progress struct {
	At time.Time `json:"at"`
	// Started is when a loadgen's wait for the start instant ended and its
	// fleet began (sent once, in its first progress after the start): how
	// late it began is its start skew.
	Started time.Time `json:"started,omitzero"`
	// Stats are a loadgen's live counters.
	Stats loadgen.Stats `json:"stats"`
	// PIDs are a target or proxy group's current processes.
	PIDs []int `json:"pids,omitempty"`
	// HostStats are the figures of the agent's host now, as in Ready.
	HostStats *HostStats `json:"host_stats,omitempty"`
}

// Op names a control request.
type Op string

// The control requests: each is what the chaos supervisor does to a target
// (supervisor.Target) or a proxy (supervisor.Proxy).
const (
	OpRestart      Op = "restart"       // Control.Restart
	OpStall        Op = "stall"         // Control.For
	OpBacklog      Op = "backlog"       // Control.Backlog
	OpAcceptRate   Op = "accept_rate"   // Control.Rate
	OpReject       Op = "reject"        // Control.Status, RetryAfter, For
	OpEarlyRetries Op = "early_retries" // Reply.EarlyRetries
	OpTLS          Op = "tls"           // Reply.TLS
	OpStats        Op = "stats"         // Reply.Stats
	OpProxyFault   Op = "proxy_fault"   // Control.Fault
)

// Control asks a target or proxy agent to do one thing; the agent answers
// with a Reply of the same ID.
type Control struct {
	ID uint64 `json:"id"`
	Op Op     `json:"op"`
	// Restart is the restart event (mode, procs, interval, down, shape).
	Restart *chaos.Event `json:"restart,omitempty"`
	// For is how long a stall or reject lasts.
	For time.Duration `json:"for,omitempty"`
	// Backlog is the new listen backlog.
	Backlog int `json:"backlog,omitempty"`
	// Rate is the group's new accept rate per second (0: unlimited).
	Rate float64 `json:"rate,omitempty"`
	// Status and RetryAfter are a reject's answer.
	Status     int           `json:"status,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Fault is the proxy's new fault set (zero: none).
	Fault *fault.Set `json:"fault,omitempty"`
}

// Reply answers a Control.
type Reply struct {
	ID uint64 `json:"id"`
	// Error is why the request failed; empty on success.
	Error string `json:"error,omitempty"`
	// Restarted is what a restart did (wall-clock instants of the agent).
	Restarted *supervisor.Restarted `json:"restarted,omitempty"`
	// EarlyRetries are each target process's early-retry counters by PID.
	EarlyRetries map[int]uint64 `json:"early_retries,omitempty"`
	// TLS are a wss:// target group's TLS handshakes so far, summed over
	// every process it ever had; nil for ws://.
	TLS *tlsconf.Stats `json:"tls,omitempty"`
	// Stats are the target's counters summed over its running processes.
	Stats *target.Stats `json:"stats,omitempty"`
}

// Event is something that happened to an agent's role that nobody
// scheduled.
type Event struct {
	// Kind is "crash": a process exited when nothing stopped it.
	Kind string `json:"kind"`
	// Role is the role the process belonged to.
	Role Role `json:"role"`
	// PID is the process that exited.
	PID int `json:"pid"`
	// Exit is its exit status as text ("signal: killed", "exit status 1").
	Exit string `json:"exit"`
	// At is when it was seen to exit (the agent's wall clock).
	At time.Time `json:"at"`
}

// EventCrash is Event.Kind of a process that exited unscheduled.
const EventCrash = "crash"

// Final says an agent's part of the run is over. A loadgen has sent all its
// results as pieces before it (and keeps its clients' transitions for the
// recovery exchange); a target or proxy sends it empty and exits.
type Final struct {
	// Pieces is how many results pieces the agent sent in all.
	Pieces int `json:"pieces,omitempty"`
	// HostStats are the figures of the agent's host at its end, as in
	// Ready.
	HostStats *HostStats `json:"host_stats,omitempty"`
}

// HostStats are figures of the host an agent on another host runs on,
// read there: its network namespace's kernel counters and the resources of
// the processes of the roles it runs. They ride on the agent's own
// messages (ready, progress, final), so they are signed as every message
// is; the coordinator keeps the latest of each agent process.
type HostStats struct {
	// N numbers one agent process's readings: of two, the one with the
	// higher N is the later.
	N uint64 `json:"n"`
	// Kernel is the change of the herd counters of the agent's network
	// namespace since the agent took its first plan; nil when they could
	// not be read (KernelError says why).
	Kernel *results.KernelDelta `json:"kernel,omitempty"`
	// KernelError says why Kernel is nil.
	KernelError string `json:"kernel_error,omitempty"`
	// Resources are each role's processes on the host ("loadgen",
	// "target", "proxy", "agent": the agent process itself), sampled there
	// once a second.
	Resources map[string]results.ResourceStats `json:"resources,omitempty"`
}

// Recover gives the loadgen agents the run's events, once it is over, so
// each computes its clients' share of every event's recovery
// (results.RecoveryPartials) without the coordinator ever holding the
// fleet's transitions.
type Recover struct {
	// Events are the run's events in Start order (summary.SortEvents).
	Events []EventTimes `json:"events"`
	// End is the run's end, from its start.
	End time.Duration `json:"end"`
}

// EventTimes is what recovery needs of an event: its instants on the
// run's time axis.
type EventTimes struct {
	Start      time.Duration `json:"start"`
	End        time.Duration `json:"end"`
	Ready      time.Duration `json:"ready"`
	NeverReady bool          `json:"never_ready,omitempty"`
}

// Recovery is a chunk of a loadgen agent's recovery partials, one per
// event of the Recover message; the chunks merge
// (results.MergeRecoveryPartials), and the one with Last ends them.
type Recovery struct {
	Partials []results.RecoveryPartial `json:"partials"`
	Last     bool                      `json:"last,omitempty"`
	// Resubscribed are partials of the clients' re-subscribed transitions
	// (a session protocol's fleet), merged likewise; they come in chunks
	// before the last one.
	Resubscribed []results.RecoveryPartial `json:"resubscribed,omitempty"`
}
