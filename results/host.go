package results

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
	// PeakSocketMemBytes is the most kernel memory charged to the role's
	// TCP sockets at one sample, summed: receive and send queues, forward
	// allocations, option memory (sock_diag INET_DIAG_SKMEMINFO). The
	// socket structures themselves (slab) are not in it.
	PeakSocketMemBytes uint64 `json:"peak_socket_mem_bytes"`
	// SocketMemPerConnBytes is PeakSocketMemBytes / PeakConns.
	SocketMemPerConnBytes int64 `json:"socket_mem_per_conn_bytes"`
}

// PerConn sets the per-connection figures from the peaks.
func (r *ResourceStats) PerConn() {
	r.RSSPerConnBytes, r.SocketMemPerConnBytes = 0, 0
	if r.PeakConns > 0 {
		r.RSSPerConnBytes = int64(r.PeakRSSBytes) / r.PeakConns
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
