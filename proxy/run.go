package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/spec"
)

// MaxProcs caps RunConfig.Procs: far more proxy processes than a run of
// this machine's size could feed.
const MaxProcs = 256

// RunConfig configures one `stampede proxy` process: a fault proxy in
// front of any server, with a control API and, optionally, a schedule of
// proxy events.
type RunConfig struct {
	// Proxy configures the proxy (each process's, with Procs > 1).
	Proxy Config
	// Procs is the number of proxy processes; above 1, Run starts a
	// Group of child processes on one port and controls them. Each
	// process relays up to about PerProcess connections. Default 1.
	Procs int
	// Spawn starts one child process, with Procs > 1. Required then.
	Spawn Spawner
	// ControlAddr is where the HTTP control API listens
	// (ControlHandler, behind controlapi.Guard with Proxy.ControlToken).
	// Default 127.0.0.1:0. Beyond loopback, Run warns on Stderr.
	ControlAddr string
	// Initial is the fault set active from the start; the zero set is none.
	Initial fault.Set
	// Schedule, if set, switches faults on a time axis starting when the
	// proxy is ready. Only proxy events apply to a proxy alone.
	Schedule *chaos.Schedule
	// Duration ends the run after this long; 0 runs until ctx ends.
	Duration time.Duration
	// Stdout receives the ready line (childproc.ReadyLine: ready, addr, pid,
	// control, token, t, children). Default os.Stdout.
	Stdout io.Writer
	// Stderr receives warnings. Default os.Stderr.
	Stderr io.Writer
	// Log receives a line per chaos event and the final counters; nil means
	// none.
	Log io.Writer
}

// Validate reports the first unusable field as a *spec.FieldError naming the
// field (Proxy's own fields, Procs, Duration, Initial, Schedule).
func (rc RunConfig) Validate() error {
	if err := rc.Proxy.Validate(); err != nil {
		return err
	}
	bad := func(field, format string, a ...any) error {
		return spec.Errorf("Proxy."+field, format, a...)
	}
	if rc.Procs < 0 {
		return bad("Procs", "must not be negative, got %d", rc.Procs)
	}
	if rc.Procs > MaxProcs {
		return bad("Procs", "%d is above the cap of %d proxy processes", rc.Procs, MaxProcs)
	}
	if rc.Duration < 0 {
		return bad("Duration", "must not be negative, got %s", rc.Duration)
	}
	if err := rc.Initial.Validate(); err != nil {
		return bad("Initial", "%v", err)
	}
	if rc.Schedule == nil {
		return nil
	}
	for _, e := range rc.Schedule.Entries {
		if e.Event.Kind != chaos.ProxyEvent {
			return bad("Schedule", "line %d: %q is a %s event: a proxy on its own applies only proxy events", e.Line, e.Text, e.Event.Kind)
		}
	}
	if rc.Duration > 0 {
		if err := rc.Schedule.Check(rc.Duration); err != nil {
			return bad("Schedule", "%v", err)
		}
	}
	return nil
}

// Run is `stampede proxy`: it starts the proxy (or a group of proxy
// processes), serves the control API, prints the ready line, applies the
// schedule, and stops when ctx ends or Duration has passed. It returns nil
// after a clean stop.
func Run(ctx context.Context, rc RunConfig) error {
	if err := rc.Validate(); err != nil {
		return err
	}
	rc, token := rc.withDefaults()
	logw := rc.Log
	line := childproc.ReadyLine{Ready: true, PID: os.Getpid(), Token: token}
	var ctl Controller
	var px supervisor.Proxy
	if rc.Procs > 1 {
		g, err := StartGroup(ctx, GroupConfig{
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
		p, err := Start(rc.Proxy)
		if err != nil {
			return err
		}
		defer p.Close()
		ctl, px, line.Addr = LocalController(p), p, p.Addr()
	}
	if rc.Initial != (fault.Set{}) {
		if err := ctl.Apply(ctx, rc.Initial); err != nil {
			return err
		}
	}
	ln, err := controlapi.Listen(rc.ControlAddr, rc.Stderr)
	if err != nil {
		return spec.Wrap("Proxy.ControlAddr", err)
	}
	api := controlapi.Guard(ControlHandler(ctl, chaos.ParseProxyFault), ln.Addr().String(), token)
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	line.Control, line.T = ln.Addr().String(), time.Now()
	if err := childproc.WriteReady(rc.Stdout, line); err != nil {
		return err
	}

	return rc.serve(ctx, ctl, px, line.T)
}

// withDefaults is rc with its defaults applied (a free loopback control
// port, the process's standard streams, a discarded log) and the control
// API's token: the one given, or a new one. The processes of a group each
// draw their own.
func (rc RunConfig) withDefaults() (RunConfig, string) {
	if rc.ControlAddr == "" {
		rc.ControlAddr = "127.0.0.1:0"
	}
	if rc.Stdout == nil {
		rc.Stdout = os.Stdout
	}
	if rc.Stderr == nil {
		rc.Stderr = os.Stderr
	}
	if rc.Log == nil {
		rc.Log = io.Discard
	}
	token := rc.Proxy.ControlToken
	if token == "" {
		token = controlapi.NewToken()
	}
	rc.Proxy.ControlToken = ""
	return rc, token
}

// serve applies the schedule from start until ctx ends or Duration has
// passed, switches every fault off and logs the proxy's counters.
func (rc RunConfig) serve(ctx context.Context, ctl Controller, px supervisor.Proxy, start time.Time) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rc.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, rc.Duration)
		defer cancel()
	}
	var supErr error
	if rc.Schedule != nil {
		sup := &supervisor.Supervisor{Schedule: rc.Schedule, Proxy: px, Log: func(f string, a ...any) { fmt.Fprintf(rc.Log, f+"\n", a...) }}
		supErr = sup.Run(runCtx, start, rc.Duration)
	}
	<-runCtx.Done()
	px.Set(fault.Set{})
	if st, err := ctl.Stats(context.Background()); err == nil {
		fmt.Fprintf(rc.Log, "proxy: %d accepted, %d open, %d reset, %d dropped, %d blackholed, %d refused; %d bytes up, %d down\n",
			st.Accepted, st.Active, st.Reset, st.Dropped, st.Blackholed, st.Refused, st.BytesUp, st.BytesDown)
	}
	if supErr != nil && !errors.Is(supErr, context.Canceled) && !errors.Is(supErr, context.DeadlineExceeded) {
		return supErr
	}
	return nil
}
