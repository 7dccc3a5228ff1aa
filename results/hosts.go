package results

// HostSummary is one host of a run spread over several (summary.json
// "hosts"): the figures read on that host, by the agent running there (or
// by the coordinator, for its own host). A figure that was not read is
// null, never another host's.
type HostSummary struct {
	// Name is the agent's name, or "coordinator" for the coordinator's
	// own host.
	Name string `json:"name"`
	// Host is the host's name, as the agent declared it.
	Host string `json:"host"`
	// Roles are what ran there: "target", "loadgen", "proxy" or
	// "coordinator", in that order.
	Roles []string `json:"roles"`
	// Kernel is the change of the host's kernel counters over the run
	// (its whole network namespace); null when they were not read.
	Kernel *KernelDelta `json:"kernel"`
	// KernelNote says why Kernel is null; empty when it was read.
	KernelNote string `json:"kernel_note,omitempty"`
	// Resources are the figures of each role's processes on the host
	// (and "agent": the agent process itself), sampled there; null when
	// none reached the coordinator.
	Resources map[string]ResourceStats `json:"resources"`
}

// HasRole reports whether role ran on the host.
func (h HostSummary) HasRole(role string) bool {
	for _, r := range h.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// Add returns the sum of d and o, counter by counter.
func (d KernelDelta) Add(o KernelDelta) KernelDelta {
	return KernelDelta{
		ListenOverflows:      d.ListenOverflows + o.ListenOverflows,
		ListenDrops:          d.ListenDrops + o.ListenDrops,
		TCPSynRetrans:        d.TCPSynRetrans + o.TCPSynRetrans,
		TCPReqQFullDoCookies: d.TCPReqQFullDoCookies + o.TCPReqQFullDoCookies,
		TCPReqQFullDrop:      d.TCPReqQFullDrop + o.TCPReqQFullDrop,
		SyncookiesSent:       d.SyncookiesSent + o.SyncookiesSent,
		SyncookiesRecv:       d.SyncookiesRecv + o.SyncookiesRecv,
		SyncookiesFailed:     d.SyncookiesFailed + o.SyncookiesFailed,
		TCPTimeouts:          d.TCPTimeouts + o.TCPTimeouts,
		TCPAbortOnTimeout:    d.TCPAbortOnTimeout + o.TCPAbortOnTimeout,
		TCPBacklogDrop:       d.TCPBacklogDrop + o.TCPBacklogDrop,
		ActiveOpens:          d.ActiveOpens + o.ActiveOpens,
		PassiveOpens:         d.PassiveOpens + o.PassiveOpens,
		AttemptFails:         d.AttemptFails + o.AttemptFails,
		EstabResets:          d.EstabResets + o.EstabResets,
		RetransSegs:          d.RetransSegs + o.RetransSegs,
		OutRsts:              d.OutRsts + o.OutRsts,
	}
}

// Add returns the sum of r and o: each host's peaks added (they may fall
// at different instants, so the sum errs high), CPU, processes and
// samples added; the per-connection figures from the summed peaks. The
// CPU per connect and per reconnect need each host's CPU samples at the
// same instants, which a sum of totals does not have: nil.
func (r ResourceStats) Add(o ResourceStats) ResourceStats {
	s := ResourceStats{
		PeakRSSBytes:       r.PeakRSSBytes + o.PeakRSSBytes,
		PeakAnonBytes:      r.PeakAnonBytes + o.PeakAnonBytes,
		CPUSeconds:         r.CPUSeconds + o.CPUSeconds,
		PeakFDs:            r.PeakFDs + o.PeakFDs,
		PeakThreads:        r.PeakThreads + o.PeakThreads,
		Processes:          r.Processes + o.Processes,
		ProcessesSeen:      r.ProcessesSeen + o.ProcessesSeen,
		Samples:            max(r.Samples, o.Samples),
		PeakConns:          r.PeakConns + o.PeakConns,
		PeakSocketMemBytes: r.PeakSocketMemBytes + o.PeakSocketMemBytes,
	}
	s.PerConn()
	return s
}
