package agent

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/hoststat"
)

// hostWatch reads the figures of the host this agent process runs on: the
// kernel counters of its network namespace (their change since the
// agent's first plan) and the resources of the processes of every role it
// runs, sampled here once a second. They ride on the roles' own ready,
// progress and final messages (tap), so the coordinator reads each host's
// figures from that host, never its own.
type hostWatch struct {
	read    func() (hoststat.KernelCounters, error)
	sampler *hoststat.Sampler
	cancel  context.CancelFunc

	mu      sync.Mutex
	n       uint64
	base    hoststat.KernelCounters
	baseErr error
	procs   map[*tap][]int32 // each channel's processes
}

// newHostWatch reads the kernel counters now (the baseline) and starts
// sampling the roles' processes.
func newHostWatch(read func() (hoststat.KernelCounters, error)) *hostWatch {
	w := &hostWatch{read: read, procs: map[*tap][]int32{}}
	w.base, w.baseErr = read()
	w.sampler = hoststat.NewSampler(time.Second, w.pids)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.sampler.Run(ctx)
	return w
}

// pids returns the processes of each role run here, and this agent
// process itself as "agent".
func (w *hostWatch) pids() map[string][]int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string][]int32{"agent": {int32(os.Getpid())}}
	for t, ps := range w.procs {
		m[string(t.role)] = append(m[string(t.role)], ps...)
	}
	return m
}

// setPIDs records the processes of the role on channel t.
func (w *hostWatch) setPIDs(t *tap, pids []int) {
	ps := make([]int32, len(pids))
	for i, p := range pids {
		ps[i] = int32(p)
	}
	w.mu.Lock()
	w.procs[t] = ps
	w.mu.Unlock()
}

// stats reads the host's figures now; last samples the processes first
// (a role's final message: its processes' last figures).
func (w *hostWatch) stats(last bool) *HostStats {
	if last {
		w.sampler.Sample()
	}
	res := w.sampler.Stats()
	w.mu.Lock()
	defer w.mu.Unlock()
	now, err := w.read()
	w.n++
	h := &HostStats{N: w.n, Resources: res}
	switch {
	case w.baseErr != nil:
		h.KernelError = w.baseErr.Error()
	case err != nil:
		h.KernelError = err.Error()
	default:
		d := hoststat.Delta(w.base, now)
		h.Kernel = &d
	}
	return h
}

// stop ends the sampling.
func (w *hostWatch) stop() { w.cancel() }

// tap is a role's channel whose ready, progress and final messages get
// the host's figures on their way out.
type tap struct {
	Transport
	w    *hostWatch
	role Role
}

// Send adds the host's figures to m when it is a ready, progress or final
// message, and sends it.
func (t *tap) Send(m Message) error {
	switch {
	case m.Kind == KindReady && m.Ready != nil:
		r := *m.Ready
		if r.PIDs != nil {
			t.w.setPIDs(t, r.PIDs)
		}
		r.HostStats = t.w.stats(false)
		m.Ready = &r
	case m.Kind == KindProgress && m.Progress != nil:
		p := *m.Progress
		if p.PIDs != nil {
			t.w.setPIDs(t, p.PIDs)
		}
		p.HostStats = t.w.stats(false)
		m.Progress = &p
	case m.Kind == KindFinal:
		var f Final
		if m.Final != nil {
			f = *m.Final
		}
		f.HostStats = t.w.stats(true)
		m.Final = &f
	}
	return t.Transport.Send(m)
}
