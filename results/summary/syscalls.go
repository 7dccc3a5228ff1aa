package summary

import "github.com/stampede-dev/stampede/results"

// SyscallCount is one role's system calls, counted by its own processes
// (rawsys.Counts: the reactors' and accept loops' calls by kind), and the
// attempts the same processes made or took over the same span: the
// loadgen's connection attempts, the target's accepted connections.
type SyscallCount struct {
	// Calls are the calls by kind ("connect", "close", "epoll_ctl"...).
	Calls map[string]uint64
	// Attempts divides them.
	Attempts uint64
}

// setSyscalls sets r's syscalls per attempt from c: nil without attempts
// or without calls counted.
func setSyscalls(r *results.ResourceStats, c SyscallCount) {
	var total uint64
	for _, n := range c.Calls {
		total += n
	}
	if c.Attempts == 0 || total == 0 {
		return
	}
	a := float64(c.Attempts)
	per := float64(total) / a
	r.SyscallsPerAttempt = &per
	r.SyscallsByKind = make(map[string]float64, len(c.Calls))
	for k, n := range c.Calls {
		r.SyscallsByKind[k] = float64(n) / a
	}
}
