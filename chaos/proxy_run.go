package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/target"
)

// ProxyRunConfig configures one `stampede proxy` process: a fault proxy in
// front of any server, with a control API and, optionally, a schedule of
// proxy events.
type ProxyRunConfig struct {
	// Proxy configures the proxy (each process's, with Procs > 1).
	Proxy proxy.Config
	// Procs is the number of proxy processes; above 1, RunProxy starts a
	// proxy.Group of child processes on one port and controls them. Each
	// process relays up to about proxy.PerProcess connections. Default 1.
	Procs int
	// Spawn starts one child process, with Procs > 1. Required then.
	Spawn proxy.Spawner
	// ControlAddr is where the HTTP control API listens
	// (proxy.ControlHandler, behind controlapi.Guard with
	// Proxy.ControlToken). Default 127.0.0.1:0. Beyond loopback, RunProxy
	// warns on Stderr.
	ControlAddr string
	// Initial is the fault set active from the start; the zero set is none.
	Initial fault.Set
	// Schedule, if set, switches faults on a time axis starting when the
	// proxy is ready. Only proxy events apply to a proxy alone.
	Schedule *Schedule
	// Duration ends the run after this long; 0 runs until ctx ends.
	Duration time.Duration
	// Stdout receives the ready line (target.ReadyLine: ready, addr, pid,
	// control, token, t, children). Default os.Stdout.
	Stdout io.Writer
	// Stderr receives warnings. Default os.Stderr.
	Stderr io.Writer
	// Log receives a line per chaos event and the final counters; nil means
	// none.
	Log io.Writer
}

// Validate reports the first unusable field, named as its flag.
func (rc ProxyRunConfig) Validate() error {
	if err := rc.Proxy.Validate(); err != nil {
		return err
	}
	if rc.Procs < 0 {
		return fmt.Errorf("--procs must not be negative, got %d", rc.Procs)
	}
	if rc.Procs > target.MaxProcs {
		return fmt.Errorf("--procs %d is above the cap of %d proxy processes", rc.Procs, target.MaxProcs)
	}
	if rc.Duration < 0 {
		return fmt.Errorf("--duration must not be negative, got %s", rc.Duration)
	}
	if rc.Schedule == nil {
		return nil
	}
	for _, e := range rc.Schedule.Entries {
		if e.Event.Kind != ProxyEvent {
			return fmt.Errorf("--chaos: line %d: %q is a %s event: a proxy on its own applies only proxy events", e.Line, e.Text, e.Event.Kind)
		}
	}
	if rc.Duration > 0 {
		if err := rc.Schedule.Check(rc.Duration); err != nil {
			return fmt.Errorf("--chaos: %w", err)
		}
	}
	return nil
}

// HasProxyEvents reports whether s has proxy events, which need the fault
// proxy between the fleet and the target. A nil schedule has none.
func (s *Schedule) HasProxyEvents() bool {
	if s == nil {
		return false
	}
	for _, e := range s.Entries {
		if e.Event.Kind == ProxyEvent {
			return true
		}
	}
	return false
}

// RunProxy is `stampede proxy`: it starts the proxy (or a group of proxy
// processes), serves the control API, prints the ready line, applies the
// schedule, and stops when ctx ends or Duration has passed. It returns nil
// after a clean stop.
func RunProxy(ctx context.Context, rc ProxyRunConfig) error {
	if err := rc.Validate(); err != nil {
		return err
	}
	if rc.ControlAddr == "" {
		rc.ControlAddr = "127.0.0.1:0"
	}
	if rc.Stdout == nil {
		rc.Stdout = os.Stdout
	}
	if rc.Stderr == nil {
		rc.Stderr = os.Stderr
	}
	token := rc.Proxy.ControlToken
	if token == "" {
		token = controlapi.NewToken()
	}
	rc.Proxy.ControlToken = "" // a group's processes each draw their own
	logw := rc.Log
	if logw == nil {
		logw = io.Discard
	}
	line := target.ReadyLine{Ready: true, PID: os.Getpid(), Token: token}
	var ctl proxy.Controller
	var px Proxy
	if rc.Procs > 1 {
		g, err := proxy.StartGroup(ctx, proxy.GroupConfig{
			Spawn: rc.Spawn, Procs: rc.Procs, Proxy: rc.Proxy,
			Log: func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) },
		})
		if err != nil {
			return err
		}
		defer g.Close()
		ctl, px, line.Addr = g, g, g.Addr()
		line.Children = g.Children()
	} else {
		p, err := proxy.Start(rc.Proxy)
		if err != nil {
			return err
		}
		defer p.Close()
		ctl, px, line.Addr = proxy.LocalController(p), p, p.Addr()
	}
	if rc.Initial != (fault.Set{}) {
		if err := ctl.Apply(ctx, rc.Initial); err != nil {
			return err
		}
	}
	ln, err := controlapi.Listen(rc.ControlAddr, rc.Stderr)
	if err != nil {
		return fmt.Errorf("--control-addr: %w", err)
	}
	api := controlapi.Guard(proxy.ControlHandler(ctl, ParseProxyFault), ln.Addr().String(), token)
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	line.Control, line.T = ln.Addr().String(), time.Now()
	b, _ := json.Marshal(line)
	if _, err := rc.Stdout.Write(append(b, '\n')); err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rc.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, rc.Duration)
		defer cancel()
	}
	var supErr error
	if rc.Schedule != nil {
		sup := &Supervisor{Schedule: rc.Schedule, Proxy: px, Log: func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) }}
		supErr = sup.Run(runCtx, line.T, rc.Duration)
	}
	<-runCtx.Done()
	px.Set(fault.Set{})
	if st, err := ctl.Stats(context.Background()); err == nil {
		fmt.Fprintf(logw, "proxy: %d accepted, %d open, %d reset, %d dropped, %d blackholed, %d refused; %d bytes up, %d down\n",
			st.Accepted, st.Active, st.Reset, st.Dropped, st.Blackholed, st.Refused, st.BytesUp, st.BytesDown)
	}
	if supErr != nil && !errors.Is(supErr, context.Canceled) && !errors.Is(supErr, context.DeadlineExceeded) {
		return supErr
	}
	return nil
}
