package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-dev/stampede/hoststat"
)

// Roles runs the roles placed on a joined agent: a loadgen share in a
// child process of its own (a process holds at most PerProcess clients'
// files; the lean stampede-worker when it is beside the binary), its
// messages relayed both ways; a target or proxy group in this process
// (its own processes are children already).
type Roles struct {
	// Exe and Lean say which binaries start the loadgen children
	// (Command); empty means this executable, or the lean worker beside it.
	Exe, Lean string
	// Logs receives the loadgen children's stderr, each line prefixed with
	// its name.
	Logs io.Writer
	// Agent configures the roles run in this process (Host: where a
	// target or proxy listens).
	Agent AgentConfig
	// Allow is the agent's own allow list (CheckPlanLoad): a plan
	// whose load goes to a host that neither it nor loopback and the
	// namespace hosts allow is refused, whatever the coordinator signed.
	Allow []string
	// ReadKernel reads this host's kernel counters; nil means
	// hoststat.KernelSnapshot (this process's network namespace).
	ReadKernel func() (hoststat.KernelCounters, error)

	once  sync.Once
	watch *hostWatch
}

// host returns the watch of this host's figures, started with the first
// plan: the kernel counters' baseline is read then.
func (r *Roles) host() *hostWatch {
	r.once.Do(func() {
		read := r.ReadKernel
		if read == nil {
			read = hoststat.KernelSnapshot
		}
		r.watch = newHostWatch(read)
	})
	return r.watch
}

// Close stops sampling this host's figures.
func (r *Roles) Close() {
	r.once.Do(func() {}) // none started: none will be
	if r.watch != nil {
		r.watch.stop()
	}
}

// ServeAll serves every role placed on this host through serveAll (a
// joined agent's Serve, which calls its argument with each role's Link)
// until the
// run is over, then stops sampling the host. A refused plan ends every
// role at once, whatever the coordinator does next: one that signs a plan
// to a host nobody allowed is not to be trusted with another; its
// *PlanLoadError is returned.
func (r *Roles) ServeAll(ctx context.Context, serveAll func(context.Context, func(context.Context, Link) error) error) error {
	defer r.Close()
	serveCtx, refuse := context.WithCancel(ctx)
	defer refuse()
	var refused atomic.Pointer[PlanLoadError]
	err := serveAll(serveCtx, func(ctx context.Context, l Link) error {
		err := r.Serve(ctx, OverLink(l))
		if pe := (*PlanLoadError)(nil); errors.As(err, &pe) {
			refused.CompareAndSwap(nil, pe)
			refuse()
		}
		return err
	})
	if pe := refused.Load(); err != nil && pe != nil {
		return pe
	}
	return err
}

// Serve runs the role whose plan comes first on t.
func (r *Roles) Serve(ctx context.Context, t Transport) error {
	m, err := t.Recv()
	if err != nil {
		return err
	}
	if m.Kind != KindPlan || m.Plan == nil {
		return Serve(ctx, &first{Transport: t, m: &m}, r.Agent) // it refuses what is no plan
	}
	if err := CheckPlanLoad(m.Plan, r.Allow); err != nil {
		_ = t.Send(Message{V: Version, Kind: KindError, Agent: m.Agent, Error: "agent refused the plan: " + err.Error()})
		return err
	}
	tp := &tap{Transport: t, w: r.host(), role: m.Plan.Role}
	if m.Plan.Role == RoleLoadgen {
		return r.relay(ctx, tp, m)
	}
	return Serve(ctx, &first{Transport: tp, m: &m}, r.Agent)
}

// relay runs a loadgen share in a child process and relays its messages
// until both sides are done: the coordinator's end closes the child's
// stdin, which stops its load and has it report; the coordinator's loss
// kills it at once. The child's messages are read to their end whatever
// happens, so it never blocks on a full pipe.
func (r *Roles) relay(ctx context.Context, t *tap, plan Message) error {
	exe, args, err := Command(r.Exe, r.Lean, RoleLoadgen)
	if err != nil {
		return err
	}
	name := "loadgen"
	if plan.Plan.Name != "" {
		name = plan.Plan.Name
	}
	p, err := SpawnAgent(ctx, exe, args, nil, name, r.Logs)
	if err != nil {
		return err
	}
	t.w.setPIDs(t, []int{p.PID()})
	if err := p.Send(plan); err != nil {
		p.Kill()
		return fmt.Errorf("%s: %w", name, err)
	}
	down := make(chan struct{})
	go func() {
		defer close(down)
		for {
			m, err := t.Recv()
			if errors.Is(err, io.EOF) {
				_ = p.CloseInput() // the child's stdin: it stops and reports
				return
			}
			if err != nil {
				// The coordinator is gone: nobody is left to report to, and
				// no fleet may keep hammering a server with nobody
				// watching. The share ends at once.
				_ = p.Kill()
				return
			}
			_ = p.Send(m)
		}
	}()
	for {
		m, err := p.Recv()
		if err != nil {
			break
		}
		_ = t.Send(m)
	}
	_ = t.Close()
	p.WaitOrKill(5 * time.Second)
	_ = p.Close()
	<-down
	if err := p.Wait(); err != nil && err != io.EOF {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// first is a transport whose first message was read already.
type first struct {
	Transport
	m *Message
}

func (f *first) Recv() (Message, error) {
	if m := f.m; m != nil {
		f.m = nil
		return *m, nil
	}
	return f.Transport.Recv()
}
