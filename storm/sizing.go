package storm

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/stampede-dev/stampede/spec"
)

// Scale limits of one machine (docs/sizing.md): one process may hold at
// most as many connections as its open-file limit allows (20,000 here, a
// hard limit that cannot be raised), loopback has one ephemeral port range
// per (source address, destination address, destination port), and every
// connection costs memory on both sides and in the kernel. A run sizes
// itself to the limits it reads (HostLimits); there is no fixed cap on the
// fleet.
const (
	// PerProcess is how many connections one loadgen or target process is
	// given at this machine's open-file limit of 20,000: 90 % of it
	// (Limits.PerProcess), leaving room for the process's own files, the
	// epoll descriptors, sockets in transition, and for the uneven spread
	// of an SO_REUSEPORT group (a target process gets its share plus a few
	// standard deviations, about 4 x sqrt(18,000) = 540).
	PerProcess = 18000
	// PerSourceIP is how many clients share one source address towards the
	// target's one port at most: below the default ephemeral range (28,232
	// ports) with room for ports held in TIME_WAIT across reconnects.
	PerSourceIP = 20000
	// MaxProcs caps the loadgen and the target processes a run asks for:
	// a million clients need 56 of each here, so more is a typo that would
	// fork a process storm on the machine under test.
	MaxProcs = 256
	// ConnBytes is the memory one client costs this machine when both ends
	// run on it, the estimate a run is sized by: the two sockets in the
	// kernel (about 4.4 KB for an idle loopback pair, more while bytes are
	// queued), both processes' records (at most 1 KiB each,
	// docs/sizing.md), and room for buffers in flight during a restart
	// storm. Measured: 11-12 KB per pair at 200,000 clients.
	ConnBytes = 12 << 10
	// ProcBytes is the memory estimate of one loadgen or target process's
	// own baseline (runtime, binary pages, buffers), beyond its clients.
	ProcBytes = 20 << 20
)

// Limits are the machine's limits a run is sized to. HostLimits reads them;
// tests inject small ones.
type Limits struct {
	// OpenFiles is the hard open-file limit of one process (RLIMIT_NOFILE).
	OpenFiles int
	// EphemeralPorts is the size of net.ipv4.ip_local_port_range.
	EphemeralPorts int
	// MemAvailable is the memory available for new work, in bytes
	// (/proc/meminfo MemAvailable); 0 = unknown, not checked.
	MemAvailable uint64
}

// HostLimits reads this machine's limits.
func HostLimits() Limits {
	return Limits{OpenFiles: int(min(fileLimit(), 1<<30)), EphemeralPorts: ephemeralPorts(), MemAvailable: memAvailable()}
}

// PerProcess is how many connections one loadgen or target process is
// given: 90 % of the open-file limit (PerProcess, 18,000, at 20,000).
func (l Limits) PerProcess() int { return max(1, l.OpenFiles*9/10) }

// PerSourceIP is how many clients one source address carries towards one
// destination. connect() takes ephemeral ports of one parity first,
// leaving the other half for bind() (Linux 4.6+); once that half is in use
// towards a destination every connect() scans it under a lock before
// taking a port of the other parity, and a 50,000-client ramp on 3
// addresses stalled for seconds at 42,300 connections. Stay within 90 % of
// half, and at most PerSourceIP.
func (l Limits) PerSourceIP() int { return max(1, min(PerSourceIP, l.EphemeralPorts/2*9/10)) }

// ChosenPerSourceIP is how many clients one loopback source address that a
// run chooses itself is given: half of PerSourceIP (6,352 by default), so
// that every client can hold a second port within that half during a
// reconnect herd (its old socket still closing, FIN_WAIT1 after a timed-out
// handshake, beside its new one). Measured: 50,000 clients on 4 addresses
// (12,500 each) spent 156 s of loadgen CPU in connect()'s port search and
// stalled at 23,261 connected during the herd; on 8 (6,250 each) 33 s,
// every client back. Addresses the user gives are held to PerSourceIP.
func (l Limits) ChosenPerSourceIP() int { return max(1, l.PerSourceIP()/2) }

// Sizing is how many processes and source addresses a run needs.
type Sizing struct {
	// LoadgenProcs is the number of loadgen worker processes.
	LoadgenProcs int `json:"loadgen_procs"`
	// TargetProcs is the number of target processes in the SO_REUSEPORT group.
	TargetProcs int `json:"target_procs"`
	// SourceIPs are the client source addresses (empty: the kernel's choice).
	SourceIPs []netip.Addr `json:"source_ips,omitempty"`
	// PerProcess is the connections one process was sized for.
	PerProcess int `json:"per_process"`
	// PerSourceIP is the clients one source address was sized for: the
	// chosen share (Limits.ChosenPerSourceIP) when the run chose its
	// loopback addresses, else the most one address may carry.
	PerSourceIP int `json:"per_source_ip"`
	// MemoryBytes is the memory the run was estimated to need on this
	// machine (ConnBytes per client, ProcBytes per process).
	MemoryBytes uint64 `json:"memory_bytes"`
}

// Size chooses the processes and source addresses for clients connections
// to a target on dst from this machine's limits (HostLimits); see
// Limits.Size.
func Size(clients, loadgenProcs, targetProcs int, sourceIPs []netip.Addr, dst netip.Addr) (Sizing, error) {
	return HostLimits().Size(clients, loadgenProcs, targetProcs, sourceIPs, dst)
}

// Size chooses the processes and source addresses for clients connections
// to a target on dst within l, honouring what the user asked for (zero or
// empty means "choose"). When the request cannot fit it fails with a
// message that names the limit, by how much the request exceeds it, and
// the way out.
func (l Limits) Size(clients, loadgenProcs, targetProcs int, sourceIPs []netip.Addr, dst netip.Addr) (Sizing, error) {
	if clients < 1 {
		return Sizing{}, spec.Errorf("Client.Clients", "must be at least 1, got %d", clients)
	}
	for _, p := range []struct {
		field string
		n     int
	}{{"Storm.LoadgenProcs", loadgenProcs}, {"Server.Procs", targetProcs}} {
		if p.n < 0 || p.n > MaxProcs {
			return Sizing{}, spec.Errorf(p.field, "%d is outside 0..%d (0 sizes it for the fleet)", p.n, MaxProcs)
		}
	}
	perProc, perIP := l.PerProcess(), l.PerSourceIP()
	s := Sizing{LoadgenProcs: loadgenProcs, TargetProcs: targetProcs, SourceIPs: sourceIPs, PerProcess: perProc, PerSourceIP: perIP}
	need := ceilDiv(clients, perProc)
	if need > MaxProcs {
		return s, spec.Errorf("Client.Clients", "%d needs %d processes per side at %d connections each (90 %% of the open-file limit %d), over the %d a run starts: %d clients more than %d fit; split the fleet over hosts (docs/agent.md)",
			clients, need, perProc, l.OpenFiles, MaxProcs, clients-MaxProcs*perProc, MaxProcs*perProc)
	}
	if s.LoadgenProcs == 0 {
		s.LoadgenProcs = need
	} else if s.LoadgenProcs < need {
		return s, spec.Errorf("Storm.LoadgenProcs", "%d cannot hold %d clients: one process holds at most %d connections (open-file limit %d), %d short; use at least %d",
			loadgenProcs, clients, perProc, l.OpenFiles, clients-loadgenProcs*perProc, need)
	}
	if s.TargetProcs == 0 {
		s.TargetProcs = need
	} else if s.TargetProcs < need {
		return s, spec.Errorf("Server.Procs", "%d cannot hold %d connections: one target process holds at most %d (open-file limit %d), %d short; use {Server.Procs} %d or more",
			targetProcs, clients, perProc, l.OpenFiles, clients-targetProcs*perProc, need)
	}
	needIPs := ceilDiv(clients, perIP)
	if len(s.SourceIPs) == 0 {
		loop := dst.IsLoopback() && dst.Is4()
		if needIPs > 1 && !loop {
			return s, spec.Errorf("Client.SourceIPs", "%d clients need %d source addresses (%d ephemeral ports each towards one destination); give that many", clients, needIPs, perIP)
		}
		if n := ceilDiv(clients, l.ChosenPerSourceIP()); n > 1 && loop {
			s.SourceIPs, s.PerSourceIP = LoopbackSources(n), l.ChosenPerSourceIP()
		}
	}
	if len(s.SourceIPs) > 0 && len(s.SourceIPs) < needIPs {
		return s, spec.Errorf("Client.SourceIPs", "gives %d addresses, but %d clients need %d: each address has about %d ephemeral ports towards one destination (net.ipv4.ip_local_port_range), %d clients short",
			len(s.SourceIPs), clients, needIPs, perIP, clients-len(s.SourceIPs)*perIP)
	}
	// Memory: both ends are on this machine when the target is local.
	procs := s.LoadgenProcs
	if dst.IsLoopback() {
		procs += s.TargetProcs
	}
	s.MemoryBytes = uint64(clients)*ConnBytes + uint64(procs)*ProcBytes
	if l.MemAvailable > 0 && s.MemoryBytes > l.MemAvailable {
		return s, spec.Errorf("Client.Clients", "%d needs about %s of memory (%s per client for both sockets and both processes' records, %s for each of %d processes), but %s is available (MemAvailable): %s short; about %d clients fit",
			clients, gib(s.MemoryBytes), kib(ConnBytes), mib(ProcBytes), procs, gib(l.MemAvailable), gib(s.MemoryBytes-l.MemAvailable),
			fitByMemory(l.MemAvailable, procs))
	}
	return s, nil
}

// fitByMemory is how many clients mem holds beside procs processes.
func fitByMemory(mem uint64, procs int) uint64 {
	base := uint64(procs) * ProcBytes
	if mem <= base {
		return 0
	}
	return (mem - base) / ConnBytes
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
func mib(b uint64) string { return fmt.Sprintf("%d MiB", b>>20) }
func kib(b uint64) string { return fmt.Sprintf("%d KiB", b>>10) }

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

// memAvailable returns /proc/meminfo MemAvailable in bytes, 0 if unknown.
func memAvailable() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(fs[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// fileLimit returns the hard open-file limit of this process.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 20000
	}
	return r.Max
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
