package storm

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Scale limits of one machine (docs/sizing.md): one process may
// hold at most 20,000 open files (the hard limit cannot be raised), and
// loopback has one ephemeral port range per (source address, destination
// address, destination port).
const (
	// PerProcess is how many connections one loadgen or target process is
	// given, leaving room under the open-file limit for the process's own
	// files, the epoll descriptors and sockets in transition.
	PerProcess = 15000
	// PerSourceIP is how many clients share one source address towards the
	// target's one port: below the default ephemeral range (28,232 ports)
	// with room for ports held in TIME_WAIT across reconnects.
	PerSourceIP = 20000
	// MaxClients is the largest fleet `stampede run` sizes itself for on one
	// machine.
	MaxClients = 200000
	// MaxProcs caps the loadgen and the target processes a run asks for:
	// MaxClients need 14 of each, so more is a typo that would fork a
	// process storm on the machine under test.
	MaxProcs = 256
)

// Sizing is how many processes and source addresses a run needs.
type Sizing struct {
	// LoadgenProcs is the number of loadgen worker processes.
	LoadgenProcs int `json:"loadgen_procs"`
	// TargetProcs is the number of target processes in the SO_REUSEPORT group.
	TargetProcs int `json:"target_procs"`
	// SourceIPs are the client source addresses (empty: the kernel's choice).
	SourceIPs []netip.Addr `json:"source_ips,omitempty"`
}

// Size chooses the processes and source addresses for clients connections
// to a target on dst, honouring what the user asked for (zero or empty
// means "choose"). It fails with a message that names the limit and the way
// out when the request cannot fit.
func Size(clients, loadgenProcs, targetProcs int, sourceIPs []netip.Addr, dst netip.Addr) (Sizing, error) {
	if clients < 1 {
		return Sizing{}, fmt.Errorf("--clients: must be at least 1, got %d", clients)
	}
	if clients > MaxClients {
		return Sizing{}, fmt.Errorf("--clients %d is above the %d that stampede sizes itself for on one machine (each client is an open file on both sides)", clients, MaxClients)
	}
	for _, p := range []struct {
		flag string
		n    int
	}{{"--loadgen-procs", loadgenProcs}, {"--procs", targetProcs}} {
		if p.n < 0 || p.n > MaxProcs {
			return Sizing{}, fmt.Errorf("%s %d is outside 0..%d (0 sizes it for the fleet)", p.flag, p.n, MaxProcs)
		}
	}
	s := Sizing{LoadgenProcs: loadgenProcs, TargetProcs: targetProcs, SourceIPs: sourceIPs}
	need := ceilDiv(clients, PerProcess)
	if s.LoadgenProcs == 0 {
		s.LoadgenProcs = need
	} else if s.LoadgenProcs < need {
		return s, fmt.Errorf("--loadgen-procs %d cannot hold %d clients: one process holds at most %d connections (open-file limit %d); use at least %d", loadgenProcs, clients, PerProcess, fileLimit(), need)
	}
	if s.TargetProcs == 0 {
		s.TargetProcs = need
	} else if s.TargetProcs < need {
		return s, fmt.Errorf("--procs %d cannot hold %d connections: one target process holds at most %d (open-file limit %d); use --procs %d or more", targetProcs, clients, PerProcess, fileLimit(), need)
	}
	// connect() takes ephemeral ports of one parity first, leaving the
	// other half for bind() (Linux 4.6+); once that half is in use towards
	// a destination every connect() scans it under a lock before taking a
	// port of the other parity, and a 50,000-client ramp on 3 addresses
	// stalled for seconds at 42,300 connections. Stay within 90% of half.
	ports := ephemeralPorts()
	perIP := min(PerSourceIP, ports/2*9/10)
	needIPs := ceilDiv(clients, perIP)
	if len(s.SourceIPs) == 0 && needIPs > 1 {
		if !dst.IsLoopback() || !dst.Is4() {
			return s, fmt.Errorf("%d clients need %d source addresses (%d ephemeral ports each towards one destination); give --source-ips", clients, needIPs, perIP)
		}
		s.SourceIPs = LoopbackSources(needIPs)
	}
	if len(s.SourceIPs) > 0 && len(s.SourceIPs) < needIPs {
		return s, fmt.Errorf("--source-ips gives %d addresses, but %d clients need %d: each address has about %d ephemeral ports towards one destination (net.ipv4.ip_local_port_range)", len(s.SourceIPs), clients, needIPs, perIP)
	}
	return s, nil
}

// LoopbackSources returns n loopback source addresses 127.0.0.2, 127.0.0.3,
// ...: every 127/8 address is local on Linux, so no set-up is needed.
func LoopbackSources(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, byte((i + 2) >> 8), byte((i + 2) & 0xff)})
	}
	return out
}

// ephemeralPorts returns the size of net.ipv4.ip_local_port_range (28,232
// by default).
func ephemeralPorts() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 28232
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 28232
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 28232
	}
	return hi - lo + 1
}

// fileLimit returns the hard open-file limit of this process.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return r.Max
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
