package summary

import (
	"testing"

	"github.com/stampede-dev/stampede/results"
)

// TestSetSyscalls: calls over attempts, in all and by kind; nothing
// without attempts or without calls.
func TestSetSyscalls(t *testing.T) {
	var r results.ResourceStats
	setSyscalls(&r, SyscallCount{Calls: map[string]uint64{"socket": 10, "connect": 10, "epoll_wait": 5}, Attempts: 10})
	if r.SyscallsPerAttempt == nil || *r.SyscallsPerAttempt != 2.5 || r.SyscallsByKind["epoll_wait"] != 0.5 || len(r.SyscallsByKind) != 3 {
		t.Errorf("per attempt %v, by kind %v; want 2.5, epoll_wait 0.5 of 3 kinds", r.SyscallsPerAttempt, r.SyscallsByKind)
	}
	for _, c := range []SyscallCount{{Calls: map[string]uint64{"close": 3}}, {Attempts: 4}} {
		var r results.ResourceStats
		if setSyscalls(&r, c); r.SyscallsPerAttempt != nil || r.SyscallsByKind != nil {
			t.Errorf("%+v: per attempt %v, by kind %v; want none", c, r.SyscallsPerAttempt, r.SyscallsByKind)
		}
	}
}
