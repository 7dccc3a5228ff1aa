package results

import (
	"fmt"
	"strings"
)

// What the host sampling (package hoststat) reports into a run's results:
// plain data, so the data model does not depend on how it is read.

// Roles of the processes a run samples: summary.json "resources" keys.
const (
	RoleLoadgen = "loadgen"
	RoleTarget  = "target"
	RoleProxy   = "proxy"
	// RoleCoordinator is the process that ran the run (storm.Run): what
	// it holds grows with the run's length and rooms, not its clients
	// (docs/agent.md).
	RoleCoordinator = "coordinator"
)

// ResourcesFile is the name of the per-sample resource log in a results
// folder.
const ResourcesFile = "resources.csv"

// ResourceStats is one role's resource use over a run (summary.json
// "resources").
type ResourceStats struct {
	// PeakRSSBytes is the largest resident set, summed over the role's
	// processes at one sample, in bytes.
	PeakRSSBytes uint64 `json:"peak_rss_bytes"`
	// PeakAnonBytes is the largest anonymous resident memory, summed
	// likewise: the resident set less its file-backed and shared pages
	// (/proc/PID/statm's resident minus shared). What the processes
	// allocated themselves; the pages of the binary and libraries they
	// map, which the page cache shares and which do not grow with
	// connections (tens of MiB a process), are not in it.
	PeakAnonBytes uint64 `json:"peak_anon_bytes"`
	// CPUSeconds is user+system CPU time of every process the role ever
	// had, at the last sample each was seen in: a process that exited
	// still counts.
	CPUSeconds float64 `json:"cpu_s"`
	// PeakFDs is the most open file descriptors, summed over the role's
	// processes at one sample.
	PeakFDs int64 `json:"peak_fds"`
	// PeakThreads is the most OS threads, summed likewise.
	PeakThreads int64 `json:"peak_threads"`
	// Processes is the most processes alive at one sample.
	Processes int `json:"processes"`
	// ProcessesSeen is the number of distinct processes ever sampled (a
	// restarted target adds one per restart).
	ProcessesSeen int `json:"processes_seen"`
	// Samples is the number of samples taken.
	Samples int `json:"samples"`
	// PeakConns is the most ESTABLISHED TCP sockets of the role at one
	// sample: its connections (the target's accepted ones, the loadgen's
	// to the port it dials). 0 when sockets were not counted.
	PeakConns int64 `json:"peak_conns"`
	// RSSPerConnBytes is PeakRSSBytes / PeakConns: the role's memory per
	// connection, baseline of every process included (the two peaks may
	// be at different samples, so it errs high). 0 without connections.
	RSSPerConnBytes int64 `json:"rss_per_conn_bytes"`
	// AnonPerConnBytes is PeakAnonBytes / PeakConns: the memory the
	// role's processes allocated per connection, their own baselines
	// included (it errs high as RSSPerConnBytes does).
	AnonPerConnBytes int64 `json:"anon_per_conn_bytes"`
	// PeakSocketMemBytes is the most kernel memory charged to the role's
	// TCP sockets at one sample, summed: receive and send queues, forward
	// allocations, option memory (sock_diag INET_DIAG_SKMEMINFO). The
	// socket structures themselves (slab) are not in it.
	PeakSocketMemBytes uint64 `json:"peak_socket_mem_bytes"`
	// SocketMemPerConnBytes is PeakSocketMemBytes / PeakConns.
	SocketMemPerConnBytes int64 `json:"socket_mem_per_conn_bytes"`
	// CPUUsPerConnect is the role's CPU microseconds per first connect:
	// its CPU time over the ramp, from the run's start to the last first
	// connect before the first event (of the run without one), at the
	// sample nearest the start and the first after the ramp, divided by
	// the clients that first connected in that span (CPUSpans). Nil when
	// none did, or the CPU was not sampled within CPUSampleSlack of
	// either instant.
	CPUUsPerConnect *float64 `json:"cpu_us_per_connect"`
	// CPUUsPerReconnect is the same from the first event's start to the
	// end of its herd window (the run's end without one), divided by the
	// clients that came back after that event. Nil without an event,
	// when nobody came back, or when the CPU was not sampled there.
	CPUUsPerReconnect *float64 `json:"cpu_us_per_reconnect"`
	// CPUUsPerAttempt is the role's CPU over the same span divided by the
	// attempts the fleet started in it, wasted ones included: what one
	// attempt of the herd costs. Nil without an event, without attempts,
	// or when the CPU was not sampled there.
	CPUUsPerAttempt *float64 `json:"cpu_us_per_attempt"`
	// CPUUsPerClose is the role's CPU from the first event's start to its
	// ready divided by the connections that ended in that span. The
	// attempts refused while the server was down are in that CPU too, so
	// it bounds a close from above. Nil without a ready, without
	// disconnects, or when the CPU was not sampled there.
	CPUUsPerClose *float64 `json:"cpu_us_per_close"`
	// SyscallsPerAttempt is the system calls the role's processes counted
	// themselves (the reactors' and accept loop's socket calls and epoll
	// calls, not those made through the Go runtime) over the attempts
	// they made (the loadgen) or accepted (the target), over the whole run
	// (the target: its processes alive at the end, since they started),
	// keepalive pings included.
	// Nil when the role's processes gave no counts.
	SyscallsPerAttempt *float64 `json:"syscalls_per_attempt"`
	// SyscallsByKind is SyscallsPerAttempt by kind of call, named as the
	// kernel's ("connect", "close", "epoll_ctl"...); a kind never made is
	// left out; nil when the counts are absent.
	SyscallsByKind map[string]float64 `json:"syscalls_by_kind"`
}

// PerConn sets the per-connection figures from the peaks.
func (r *ResourceStats) PerConn() {
	r.RSSPerConnBytes, r.AnonPerConnBytes, r.SocketMemPerConnBytes = 0, 0, 0
	if r.PeakConns > 0 {
		r.RSSPerConnBytes = int64(r.PeakRSSBytes) / r.PeakConns
		r.AnonPerConnBytes = int64(r.PeakAnonBytes) / r.PeakConns
		r.SocketMemPerConnBytes = int64(r.PeakSocketMemBytes) / r.PeakConns
	}
}

// KernelFile is the name of the per-second kernel counter log in a
// results folder.
const KernelFile = "kernel.csv"

// HAProxyFile is the results file of HAProxy's counters, one row per
// second and frontend, backend or server (--haproxy-socket;
// docs/loadbalancer.md).
const HAProxyFile = "haproxy.csv"

// KernelDelta is the change of the kernel counters that show a reconnect
// herd, read before and after a run (summary.json "kernel"). Names are the
// kernel's own. Like hoststat.KernelCounters, they cover the whole network
// namespace, not only stampede's sockets.
type KernelDelta struct {
	// ListenOverflows counts SYNs or final ACKs dropped because a
	// listener's accept queue was full (TcpExt).
	ListenOverflows int64 `json:"ListenOverflows"`
	// ListenDrops counts every drop at a listener, overflows included
	// (TcpExt).
	ListenDrops int64 `json:"ListenDrops"`
	// TCPSynRetrans counts SYN retransmits by clients whose SYN went
	// unanswered (TcpExt).
	TCPSynRetrans int64 `json:"TCPSynRetrans"`
	// TCPReqQFullDoCookies counts SYNs answered with a SYN cookie because
	// the SYN queue was full (TcpExt).
	TCPReqQFullDoCookies int64 `json:"TCPReqQFullDoCookies"`
	// TCPReqQFullDrop counts SYNs dropped because the SYN queue was full
	// and cookies were off (TcpExt).
	TCPReqQFullDrop int64 `json:"TCPReqQFullDrop"`
	// SyncookiesSent, SyncookiesRecv and SyncookiesFailed count SYN cookies
	// sent, validated and rejected (TcpExt).
	SyncookiesSent   int64 `json:"SyncookiesSent"`
	SyncookiesRecv   int64 `json:"SyncookiesRecv"`
	SyncookiesFailed int64 `json:"SyncookiesFailed"`
	// TCPTimeouts counts retransmission timeouts fired (TcpExt).
	TCPTimeouts int64 `json:"TCPTimeouts"`
	// TCPAbortOnTimeout counts connections aborted after too many
	// retransmits, e.g. a connect that ran out of SYN retries (TcpExt).
	TCPAbortOnTimeout int64 `json:"TCPAbortOnTimeout"`
	// TCPBacklogDrop counts segments dropped on a full socket backlog
	// (TcpExt).
	TCPBacklogDrop int64 `json:"TCPBacklogDrop"`
	// ActiveOpens and PassiveOpens count connects started and accepted
	// (Tcp).
	ActiveOpens  int64 `json:"ActiveOpens"`
	PassiveOpens int64 `json:"PassiveOpens"`
	// AttemptFails counts connects that failed: refused or reset in
	// SYN-SENT/SYN-RECV (Tcp).
	AttemptFails int64 `json:"AttemptFails"`
	// EstabResets counts established connections reset (Tcp).
	EstabResets int64 `json:"EstabResets"`
	// RetransSegs counts retransmitted segments of every kind (Tcp).
	RetransSegs int64 `json:"RetransSegs"`
	// OutRsts counts RSTs sent (Tcp).
	OutRsts int64 `json:"OutRsts"`
}

// The busy-machine thresholds (MachineLoad.Judge; docs/summary-json.md
// "machine"). A bench's headline moved from 3.4x to 1.9x with other work
// on a 2-core machine: a starved loadgen cannot fire a fixed herd in one
// tick. The load average is recorded but not judged: it counts the run's
// own processes, and it decays over a minute, so a bench's second policy
// would start under the first one's load.
const (
	// BusyOtherCPUShare is the share of all cores' time that processes
	// other than the run's may take before the machine counts as busy.
	BusyOtherCPUShare = 0.25
	// BusyStealShare is the share of all cores' time a hypervisor may
	// steal before the machine counts as busy.
	BusyStealShare = 0.10
)

// MachineLoad is how busy the machine was while a run went (summary.json
// "machine"): read from /proc/stat and /proc/loadavg at the resource
// sampler's samples. Shares are of all cores' time between the first and
// the last sample, from 0 to 1.
type MachineLoad struct {
	// Cores is the number of CPUs /proc/stat lists.
	Cores int `json:"cores"`
	// WindowS is the time from the first sample to the last, in seconds.
	WindowS float64 `json:"window_s"`
	// Samples is the number of readings taken.
	Samples int `json:"samples"`
	// Load1Start is the 1-minute load average at the first sample, and
	// Load1Max the largest at any sample (the run's own processes count
	// in both).
	Load1Start float64 `json:"load1_start"`
	Load1Max   float64 `json:"load1_max"`
	// OwnCPUShare is the CPU time of the run's own processes on this
	// machine (every sampled role's).
	OwnCPUShare float64 `json:"own_cpu_share"`
	// OtherCPUShare is the machine's busy CPU time (user, nice, system,
	// irq, softirq) minus the run's own: what other processes took.
	OtherCPUShare float64 `json:"other_cpu_share"`
	// StealShare is the time a hypervisor gave to other guests.
	StealShare float64 `json:"steal_share"`
	// Busy is true when OtherCPUShare is over BusyOtherCPUShare or
	// StealShare over BusyStealShare: the figures of the run were taken on
	// a busy machine and may differ on a quiet one. BusyReason says which,
	// in words; empty when Busy is false.
	Busy       bool   `json:"busy"`
	BusyReason string `json:"busy_reason,omitempty"`
}

// Judge sets Busy and BusyReason from the shares.
func (m *MachineLoad) Judge() {
	var why []string
	if m.OtherCPUShare > BusyOtherCPUShare {
		why = append(why, fmt.Sprintf("other processes took %.0f %% of the CPU (more than %.0f %%)", 100*m.OtherCPUShare, 100*BusyOtherCPUShare))
	}
	if m.StealShare > BusyStealShare {
		why = append(why, fmt.Sprintf("the hypervisor stole %.0f %% of the CPU (more than %.0f %%)", 100*m.StealShare, 100*BusyStealShare))
	}
	m.Busy, m.BusyReason = len(why) > 0, strings.Join(why, "; ")
}

// Text is the machine's load in one line for a person: "2 cores, load
// 0.41 at the start (max 1.90), this run 62 % of the CPU, other processes
// 3 %, steal 0 %", then "; BUSY: ..." when it was busy.
func (m *MachineLoad) Text() string {
	s := fmt.Sprintf("%d cores, load %.2f at the start (max %.2f), this run %.0f %% of the CPU, other processes %.0f %%, steal %.0f %%",
		m.Cores, m.Load1Start, m.Load1Max, 100*m.OwnCPUShare, 100*m.OtherCPUShare, 100*m.StealShare)
	if m.Busy {
		s += "; BUSY: " + m.BusyReason + ": the figures may differ on a quiet machine"
	}
	return s
}
