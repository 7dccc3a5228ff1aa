// Package hoststat samples the host while a run goes: the resources of each
// role's processes (gopsutil: RSS, CPU, open files, threads), their TCP
// sockets by state (sock_diag, or /proc/net/tcp), and the kernel's herd
// counters (/proc/net/netstat, /proc/net/snmp). It writes resources.csv and
// kernel.csv and fills the plain figures of the run's summary
// (results.ResourceStats, results.KernelDelta): hoststat imports results,
// never the other way round, so the data model does not depend on gopsutil.
package hoststat

import (
	"cmp"
	"context"
	"encoding/csv"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v3/process"
	"github.com/stampede-dev/stampede/results"
)

// ResourceSample is one role's figures at one sample: a row of
// resources.csv.
type ResourceSample struct {
	// At is when the sample was taken.
	At time.Time
	// Role names the processes sampled.
	Role string
	// Processes is the number of them alive.
	Processes int
	// RSSBytes, AnonBytes, FDs and Threads are summed over them.
	RSSBytes  uint64
	AnonBytes uint64
	FDs       int64
	Threads   int64
	// CPUSeconds is cumulative, as in results.ResourceStats.
	CPUSeconds float64
	// TCP counts the role's TCP sockets by state (Sampler.CountTCP); nil
	// when not counted.
	TCP *TCPStates
	// SocketMemBytes is the kernel memory charged to those sockets
	// (PortSockets.MemBytes); 0 when not counted.
	SocketMemBytes uint64
}

// procSample is what one process reading gives.
type procSample struct {
	pid          int32
	created      int64  // creation time in ms since the epoch: tells a reused pid apart
	rss, anon    uint64 // anon: rss less the file-backed and shared pages
	cpu          float64
	fds, threads int64
}

// procKey identifies one process over time, pid reuse included.
type procKey struct {
	pid     int32
	created int64
}

type roleState struct {
	stats results.ResourceStats
	cpu   map[procKey]float64 // last CPU seconds of every process seen
}

// cpuSum sums the CPU seconds of every process seen, in a fixed order so
// the float sum is reproducible.
func (st *roleState) cpuSum() float64 {
	keys := make([]procKey, 0, len(st.cpu))
	for k := range st.cpu {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b procKey) int {
		if a.pid != b.pid {
			return cmp.Compare(a.pid, b.pid)
		}
		return cmp.Compare(a.created, b.created)
	})
	var sum float64
	for _, k := range keys {
		sum += st.cpu[k]
	}
	return sum
}

// Sampler samples the RSS, CPU time, open files and threads of groups of
// processes (roles) once per interval, with gopsutil. The pids of a role
// may change between samples (a target restarts with a new pid): the pids
// function is asked at every sample. Safe for concurrent use.
type Sampler struct {
	interval time.Duration
	pids     func() map[string][]int32
	read     func(pid int32) (procSample, error) // gopsutil, or a fake in tests
	now      func() time.Time
	tcp      func() map[string]PortSockets // CountTCP; nil counts none
	// machine reads the machine's CPU times and 1-minute load average
	// (readMachine, or a fake in tests); its readings give Machine.
	machine func() (CPUTimes, float64, error)

	tcpMu   sync.Mutex // one TCP count at a time
	tcpNext time.Time  // no TCP count before this (TCPBudget)

	// Run counts TCP sockets beside the process samples, never holding
	// them up: the latest count done since the previous sample.
	doneMu sync.Mutex
	done   map[string]PortSockets

	mu      sync.Mutex
	roles   map[string]*roleState
	samples []ResourceSample
	mach    machineState // readings of the machine that did not fail
}

// NewSampler returns a sampler that reads the processes pids returns (role
// -> pids) every interval (1 s if not positive).
func NewSampler(interval time.Duration, pids func() map[string][]int32) *Sampler {
	if interval <= 0 {
		interval = time.Second
	}
	if pids == nil {
		pids = func() map[string][]int32 { return nil }
	}
	return &Sampler{interval: interval, pids: pids, read: readProc, now: time.Now, machine: readMachine, roles: map[string]*roleState{}}
}

// TCPBudget is the share of the sampler's time the TCP count may take. A
// sock_diag dump walks and copies every socket of the namespace: about
// 0.3 s for the 500,000 sockets of a 250,000-client run on this machine, so
// at a million connections a count every second would take more than a
// core from the run it measures. A count that took d is therefore followed
// by the next one no sooner than d / TCPBudget later; the samples between
// carry no TCP figures (empty tcp_* cells in resources.csv). Small runs,
// whose dump takes milliseconds, are counted at every sample.
const TCPBudget = 0.05

// CountTCP makes samples also count TCP sockets by state (at most
// TCPBudget of the time), once for all roles: the target's are those whose local port is serverPort, the
// loadgen's those whose remote port is dialPort, the port its clients dial
// (the target's, or a proxy's in front of it); see PortTCPStates. It also
// sums the kernel memory of those sockets (PortSocketsOf), which the
// role's figures report per connection. Call it before Run.
func (s *Sampler) CountTCP(serverPort, dialPort uint16) {
	s.tcp = func() map[string]PortSockets {
		local, remote, err := PortSocketsOf(serverPort, dialPort)
		if err != nil {
			return nil
		}
		return map[string]PortSockets{results.RoleTarget: local, results.RoleLoadgen: remote}
	}
}

// readProc reads one process with gopsutil. A fresh Process every time:
// gopsutil caches the creation time in it, which would hide a reused pid.
func readProc(pid int32) (procSample, error) {
	p, err := process.NewProcess(pid)
	if err != nil {
		return procSample{}, err
	}
	var s procSample
	if s.created, err = p.CreateTime(); err != nil {
		return s, err
	}
	mem, err := p.MemoryInfoEx() // /proc/PID/statm: resident and shared
	if err != nil {
		return s, err
	}
	t, err := p.Times()
	if err != nil {
		return s, err
	}
	fds, err := countFDs(p.Pid)
	if err != nil {
		return s, err
	}
	threads, err := p.NumThreads()
	if err != nil {
		return s, err
	}
	s.rss, s.cpu, s.fds, s.threads = mem.RSS, t.User+t.System, int64(fds), int64(threads)
	if mem.RSS > mem.Shared {
		s.anon = mem.RSS - mem.Shared
	}
	return s, nil
}

// Run samples at once, then every interval until ctx is done, then once
// more so the final CPU times count. The TCP sockets are counted (CountTCP)
// in a loop of their own, within TCPBudget: a count of two million sockets
// took 100 s at a million clients on two cores, and the processes' samples
// must not wait for it (they did: no sample for 100 s, and the count's
// figures stamped with the time it began). Each sample carries the count
// finished since the previous one, if any.
func (s *Sampler) Run(ctx context.Context) {
	s.Sample() // the sockets are few at the start: counted at once
	// A count under way when ctx ends is not waited for: it finishes on
	// its own and nobody takes it.
	go s.countLoop(ctx)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.sample(s.takeCount)
			return
		case <-t.C:
			s.sample(s.takeCount)
		}
	}
}

// countLoop counts the TCP sockets every interval, or less often as
// TCPBudget says, until ctx is done, leaving each count for takeCount.
func (s *Sampler) countLoop(ctx context.Context) {
	if s.tcp == nil {
		return
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c := s.countTCP(s.now()); c != nil {
			s.doneMu.Lock()
			s.done = c
			s.doneMu.Unlock()
		}
	}
}

// takeCount returns the TCP count finished since it was last called, nil
// if none.
func (s *Sampler) takeCount(time.Time) map[string]PortSockets {
	s.doneMu.Lock()
	defer s.doneMu.Unlock()
	c := s.done
	s.done = nil
	return c
}

// Sample takes one sample of every role now, the TCP sockets counted with
// it (within TCPBudget). A process that cannot be read (it exited) is left
// out of the sample; its last CPU time still counts.
func (s *Sampler) Sample() { s.sample(s.countTCP) }

// sample takes one sample of every role, with the TCP count tcp gives for
// the sample's time (nil: none).
func (s *Sampler) sample(tcp func(at time.Time) map[string]PortSockets) {
	roles := s.pids()
	at := s.now()
	names := make([]string, 0, len(roles))
	for r := range roles {
		names = append(names, r)
	}
	slices.Sort(names)
	// Read outside the lock: /proc reads of many processes take a while.
	read := make([][]procSample, len(names))
	for i, r := range names {
		for _, pid := range roles[r] {
			if p, err := s.read(pid); err == nil {
				p.pid = pid
				read[i] = append(read[i], p)
			}
		}
	}
	mc, load1, merr := s.machine()
	counted := tcp(at)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range names {
		st := s.roles[r]
		if st == nil {
			st = &roleState{cpu: map[procKey]float64{}}
			s.roles[r] = st
		}
		row := ResourceSample{At: at, Role: r, Processes: len(read[i])}
		for _, p := range read[i] {
			row.RSSBytes += p.rss
			row.AnonBytes += p.anon
			row.FDs += p.fds
			row.Threads += p.threads
			st.cpu[procKey{p.pid, p.created}] = p.cpu
		}
		row.CPUSeconds = st.cpuSum()
		if c, ok := counted[r]; ok {
			row.TCP, row.SocketMemBytes = &c.States, c.MemBytes
			st.stats.PeakConns = max(st.stats.PeakConns, int64(c.States[1])) // ESTABLISHED
			st.stats.PeakSocketMemBytes = max(st.stats.PeakSocketMemBytes, c.MemBytes)
		}
		st.stats.PeakRSSBytes = max(st.stats.PeakRSSBytes, row.RSSBytes)
		st.stats.PeakAnonBytes = max(st.stats.PeakAnonBytes, row.AnonBytes)
		st.stats.PeakFDs = max(st.stats.PeakFDs, row.FDs)
		st.stats.PeakThreads = max(st.stats.PeakThreads, row.Threads)
		st.stats.Processes = max(st.stats.Processes, row.Processes)
		st.stats.ProcessesSeen = len(st.cpu)
		st.stats.CPUSeconds = row.CPUSeconds
		st.stats.Samples++
		st.stats.PerConn()
		s.samples = append(s.samples, row)
	}
	if merr == nil {
		var own float64 // every role's, in a fixed order
		for _, r := range slices.Sorted(maps.Keys(s.roles)) {
			own += s.roles[r].stats.CPUSeconds
		}
		s.mach.note(at, mc, load1, own)
	}
}

// Machine returns how busy the machine was from the first sample to the
// last, the sampled processes' CPU apart (results.MachineLoad); nil before
// two samples, or when /proc/stat could not be read.
func (s *Sampler) Machine() *results.MachineLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mach.load()
}

// countTCP counts the TCP sockets for a sample taken at, unless the last
// count's cost puts the next one later (TCPBudget): then nil.
func (s *Sampler) countTCP(at time.Time) map[string]PortSockets {
	if s.tcp == nil {
		return nil
	}
	s.tcpMu.Lock()
	defer s.tcpMu.Unlock()
	if at.Before(s.tcpNext) {
		return nil
	}
	t0 := s.now()
	tcp := s.tcp()
	cost := s.now().Sub(t0)
	s.tcpNext = t0.Add(time.Duration(float64(cost) / TCPBudget))
	return tcp
}

// Stats returns every sampled role's figures so far.
func (s *Sampler) Stats() map[string]results.ResourceStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]results.ResourceStats, len(s.roles))
	for r, st := range s.roles {
		out[r] = st.stats
	}
	return out
}

// Latest returns the latest sample of every role, by role.
func (s *Sampler) Latest() []ResourceSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ResourceSample
	seen := map[string]bool{}
	for i := len(s.samples) - 1; i >= 0 && len(seen) < len(s.roles); i-- {
		if r := s.samples[i]; !seen[r.Role] {
			seen[r.Role] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b ResourceSample) int { return cmp.Compare(a.Role, b.Role) })
	return out
}

// Samples returns a copy of every sample so far, in time order (roles by
// name within one sample).
func (s *Sampler) Samples() []ResourceSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// WriteResourcesCSV writes samples as resources.csv: one row per role and
// sample, t_s in seconds from start (the run's start), then the role's
// TCP sockets by state (tcp_established ... tcp_closing, TCPStateNames),
// empty when not counted.
//
//	t_s,role,processes,rss_bytes,cpu_s,fds,threads,anon_bytes,tcp_established,...
//	0.5,loadgen,2,73400320,1.25,10043,14,20971520,10000,...
func WriteResourcesCSV(w io.Writer, start time.Time, samples []ResourceSample) error {
	cw := csv.NewWriter(w)
	header := []string{"t_s", "role", "processes", "rss_bytes", "cpu_s", "fds", "threads", "anon_bytes"}
	for _, n := range TCPStateNames() {
		header = append(header, "tcp_"+n)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range samples {
		tcp := make([]string, len(TCPStateNames()))
		if r.TCP != nil {
			for i := range tcp {
				tcp[i] = strconv.Itoa(r.TCP[i+1])
			}
		}
		if err := cw.Write(append([]string{
			strconv.FormatFloat(r.At.Sub(start).Seconds(), 'f', 3, 64),
			r.Role,
			strconv.Itoa(r.Processes),
			strconv.FormatUint(r.RSSBytes, 10),
			strconv.FormatFloat(r.CPUSeconds, 'f', -1, 64),
			strconv.FormatInt(r.FDs, 10),
			strconv.FormatInt(r.Threads, 10),
			strconv.FormatUint(r.AnonBytes, 10),
		}, tcp...)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
