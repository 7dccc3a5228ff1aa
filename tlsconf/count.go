package tlsconf

import (
	"crypto/tls"
	"runtime"

	"golang.org/x/sys/unix"
)

// Stats counts a server's completed TLS handshakes, full and resumed, and
// the CPU they took: the handshake goroutine's own CPU, read from its
// thread's clock, so waits for the client cost nothing. Every field adds
// up across processes.
type Stats struct {
	// Full counts handshakes that did the key exchange and signed with the
	// certificate's key.
	Full uint64 `json:"full"`
	// Resumed counts handshakes that resumed a session (a TLS 1.3 PSK or a
	// TLS 1.2 ticket): tls.ConnectionState.DidResume.
	Resumed uint64 `json:"resumed"`
	// FullCPUNS is the CPU of the full handshakes, in nanoseconds.
	FullCPUNS uint64 `json:"full_cpu_ns"`
	// ResumedCPUNS is the CPU of the resumed handshakes, in nanoseconds.
	ResumedCPUNS uint64 `json:"resumed_cpu_ns"`
}

// Add returns the sum of s and o.
func (s Stats) Add(o Stats) Stats {
	return Stats{Full: s.Full + o.Full, Resumed: s.Resumed + o.Resumed,
		FullCPUNS: s.FullCPUNS + o.FullCPUNS, ResumedCPUNS: s.ResumedCPUNS + o.ResumedCPUNS}
}

// FullCPUUs is the mean CPU of a full handshake in microseconds, 0 without
// one.
func (s Stats) FullCPUUs() float64 { return perUs(s.FullCPUNS, s.Full) }

// ResumedCPUUs is the mean CPU of a resumed handshake in microseconds, 0
// without one.
func (s Stats) ResumedCPUUs() float64 { return perUs(s.ResumedCPUNS, s.Resumed) }

// ResumedShare is Resumed over all handshakes, 0 without one.
func (s Stats) ResumedShare() float64 {
	if s.Full+s.Resumed == 0 {
		return 0
	}
	return float64(s.Resumed) / float64(s.Full+s.Resumed)
}

func perUs(ns, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(ns) / float64(n) / 1e3
}

// Stats returns the server's handshake counts now.
func (s *Server) Stats() Stats {
	return Stats{Full: s.stats.full.Load(), Resumed: s.stats.resumed.Load(),
		FullCPUNS: s.stats.fullNS.Load(), ResumedCPUNS: s.stats.resumedNS.Load()}
}

// Handshake runs tc's server handshake and counts it, full or resumed,
// with its CPU. The goroutine keeps its thread meanwhile, so the thread's
// CPU clock is the handshake's.
func (s *Server) Handshake(tc *tls.Conn) error {
	ns, resumed, err := timedHandshake(tc)
	if err != nil {
		return err
	}
	if resumed {
		s.stats.resumed.Add(1)
		s.stats.resumedNS.Add(ns)
	} else {
		s.stats.full.Add(1)
		s.stats.fullNS.Add(ns)
	}
	return nil
}

// timedHandshake runs tc's handshake, either end's, on a thread of its
// own and returns that thread's CPU for it and whether it resumed.
func timedHandshake(tc *tls.Conn) (ns uint64, resumed bool, err error) {
	runtime.LockOSThread()
	t0 := threadCPU()
	err = tc.Handshake()
	ns = threadCPU() - t0
	runtime.UnlockOSThread()
	if err != nil {
		return 0, false, err
	}
	return ns, tc.ConnectionState().DidResume, nil
}

// threadCPU returns the calling thread's CPU time in nanoseconds.
func threadCPU() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}
