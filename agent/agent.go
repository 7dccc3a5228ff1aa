package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/target/listener"
)

// ProgressInterval is how often an agent reports its live state.
const ProgressInterval = time.Second

// AgentConfig is what an agent process needs besides its transport.
type AgentConfig struct {
	// Exe and Args start a group's processes (server and relay roles);
	// empty Exe means this executable with Args ["agent"].
	Exe  string
	Args []string
	// Stdout receives the ready line of the server and relay roles (the
	// transport's writing side). Default os.Stdout.
	Stdout io.Writer
	// Stderr receives a group's processes' stderr. Default os.Stderr.
	Stderr io.Writer
	// Host is the IP address a target or proxy group listens on when its
	// plan names no address: an agent on another host listens where the
	// other hosts reach it. Empty means 127.0.0.1.
	Host string
}

// Serve runs one agent over t: it takes a plan, runs its role and returns
// when the role is over (the run's end, a stop, or a closed transport:
// an agent whose coordinator is gone stops at once) or ctx is done.
func Serve(ctx context.Context, t Transport, cfg AgentConfig) error {
	m, err := t.Recv()
	if err != nil {
		return fmt.Errorf("agent: agent waiting for a plan: %w", err)
	}
	if m.Kind != KindPlan || m.Plan == nil {
		return fail(t, m.Agent, fmt.Errorf("agent: agent expected a plan, got %q", m.Kind))
	}
	if m.V != Version {
		return fail(t, m.Agent, fmt.Errorf("agent: plan of protocol version %d; this agent speaks %d", m.V, Version))
	}
	p := m.Plan
	if err := p.Validate(); err != nil {
		return fail(t, m.Agent, err)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Exe == "" {
		if cfg.Exe, err = os.Executable(); err != nil {
			return fail(t, m.Agent, err)
		}
		cfg.Args = []string{"agent"}
	}
	a := &agent{t: t, id: m.Agent, plan: p, cfg: cfg}
	switch p.Role {
	case RoleLoadgen:
		return a.loadgen(ctx)
	case RoleTarget:
		return a.target(ctx)
	case RoleProxy:
		return a.proxy(ctx)
	case RoleServer:
		return a.server(ctx)
	default: // RoleRelay; Validate refused any other
		return a.relay(ctx)
	}
}

// ServeStdio runs one agent over its standard streams, as a coordinator's
// SpawnAgent or a group's childproc.Start starts it: the plan is the first
// line of stdin (childproc.ReadPlan), and the messages after it and the
// agent's own on stdout are a Stream.
func ServeStdio(ctx context.Context, stdin io.Reader, stdout io.Writer, cfg AgentConfig) error {
	in := bufio.NewReaderSize(stdin, 64<<10)
	var plan Message
	if err := childproc.ReadPlan(in, &plan); err != nil {
		return fmt.Errorf("agent: agent waiting for a plan: %w", err)
	}
	return Serve(ctx, &planFirst{Transport: NewStream(in, stdout, nil), plan: &plan}, cfg)
}

// planFirst is a Transport whose first Recv returns the plan already read.
type planFirst struct {
	Transport
	plan *Message
}

func (t *planFirst) Recv() (Message, error) {
	if m := t.plan; m != nil {
		t.plan = nil
		return *m, nil
	}
	return t.Transport.Recv()
}

// agent is one running agent.
type agent struct {
	t    Transport
	id   int
	plan *Plan
	cfg  AgentConfig
}

// send sends one message of this agent.
func (a *agent) send(m Message) error {
	m.V, m.Agent = Version, a.id
	return a.t.Send(m)
}

// ready says the role is running.
func (a *agent) ready(r Ready) error {
	r.Host, _ = os.Hostname()
	r.PID = os.Getpid()
	return a.send(Message{Kind: KindReady, Ready: &r})
}

// fail tells the coordinator why the agent stopped and returns err.
func fail(t Transport, id int, err error) error {
	sendErr := t.Send(Message{V: Version, Kind: KindError, Agent: id, Error: err.Error()})
	if sendErr != nil && !errors.Is(sendErr, io.ErrClosedPipe) {
		return errors.Join(err, sendErr)
	}
	return err
}

// control serves a target or proxy group until the coordinator says stop
// or goes away: each control request is handled by do (concurrently: a
// restart takes seconds, a proxy fault may come meanwhile) and answered;
// pids are reported every ProgressInterval. It returns after the final
// message is sent.
func (a *agent) control(ctx context.Context, do func(ctx context.Context, c *Control) Reply, pids func() []int) error {
	msgs, gone := a.receive()
	tick := time.NewTicker(ProgressInterval)
	defer tick.Stop()
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for {
		select {
		case m := <-msgs:
			switch m.Kind {
			case KindControl:
				if m.Control == nil {
					continue
				}
				c := m.Control
				go func() {
					r := do(reqCtx, c)
					r.ID = c.ID
					_ = a.send(Message{Kind: KindReply, Reply: &r})
				}()
			case KindStop:
				return a.send(Message{Kind: KindFinal, Final: &Final{}})
			}
		case now := <-tick.C:
			_ = a.send(Message{Kind: KindProgress, Progress: &Progress{At: now, PIDs: pids()}})
		case <-gone:
			return nil // the coordinator is gone: stop the role
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// replyErr is a Reply carrying err, if any.
func replyErr(err error) Reply {
	if err != nil {
		return Reply{Error: err.Error()}
	}
	return Reply{}
}

// startOnPort calls start with addr, or, when addr is empty, with a free
// port it claims on the agent's host (listener.OnFreePort, onHost). The
// returned release gives the claim up once the group on it is closed: a
// no-op for an address the plan gave.
func (a *agent) startOnPort(addr string, start func(addr string) error) (release func(), err error) {
	if addr != "" {
		return func() {}, start(addr)
	}
	claim, err := listener.OnFreePort(onHost(a.cfg.Host, start))
	if err != nil {
		return func() {}, err
	}
	return func() { claim.Close() }, nil
}

// onHost moves the free loopback port start is given to host's address
// (empty: loopback): the bind itself still tests that it is free there.
func onHost(host string, start func(addr string) error) func(addr string) error {
	if host == "" {
		return start
	}
	return func(addr string) error {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		return start(net.JoinHostPort(host, port))
	}
}
