package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

// RunConfig configures one `stampede target` process.
type RunConfig struct {
	// Server configures the WebSocket server; with Server.Procs above 1,
	// Run starts a Group of that many child processes on one port, each
	// with this configuration, and controls them. Default 1.
	Server target.Config
	// ControlAddr is where the HTTP control API listens. Default
	// 127.0.0.1:0. Beyond loopback, Run warns on Stderr.
	ControlAddr string
	// Spawn starts one child process, with Server.Procs > 1. Required then.
	Spawn Spawner
	// Stdout receives the ready line. Default os.Stdout.
	Stdout io.Writer
	// Stderr receives warnings. Default os.Stderr.
	Stderr io.Writer
	// Signals delivers the signals that stop the process: SIGUSR1 shuts
	// down abruptly, any other gracefully. Default: SIGTERM, SIGINT and
	// SIGUSR1 of this process.
	Signals <-chan os.Signal
	// Exit, if set, ends the process on an abrupt shutdown signal instead
	// of closing connections one by one: the kernel then closes every
	// socket at once (FIN, or RST where unread data waits), which is what a
	// crashed or redeployed server does. Closing 12,500 connections in
	// turn takes seconds and spreads the herd that an abrupt restart is
	// meant to show. `stampede target` sets it to os.Exit; an ACK of the
	// message protocol is only sent after the store has it, so nothing
	// ACKed is lost.
	Exit func(code int)
	// JoinGroup lets the server listen on a port another listener already
	// holds: a process of a target group joining its group's SO_REUSEPORT
	// set. Without it Run refuses a port that has a listener, so a second
	// server started early beside a running one (a restart script that
	// overlaps) does not silently split the load with it.
	JoinGroup bool
}

// MaxProcs caps the Server.Procs that Run starts. One process holds about 15,000
// connections (docs/sizing.md), so 256 hold far more than one machine's
// ports; a larger number is a typo that would fork a process storm.
const MaxProcs = 256

// Validate reports an invalid field.
func (rc RunConfig) Validate() error {
	if err := rc.Server.Validate(); err != nil {
		return err
	}
	if rc.Server.Procs > MaxProcs {
		return spec.Errorf("Server.Procs", "%d is above the cap of %d server processes on one host", rc.Server.Procs, MaxProcs)
	}
	return storeNeedsOneProc(rc.Server.Procs, rc.Server)
}

// Run is `stampede target`: it starts the server (or, with Server.Procs > 1, a
// Group of child processes on one port), serves the control API, prints the
// childproc.ReadyLine once accepting, and shuts down on a signal, on a /shutdown
// request or when ctx ends (gracefully). It returns nil after a shutdown.
func Run(ctx context.Context, rc RunConfig) error {
	if err := rc.Validate(); err != nil {
		return err
	}
	if !rc.JoinGroup {
		if err := listener.CheckFree(rc.Server.Server.WithDefaults().Addr); err != nil {
			return err
		}
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
	if rc.Server.ControlToken == "" {
		rc.Server.ControlToken = controlapi.NewToken()
	}
	if rc.Signals == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
		defer signal.Stop(ch)
		rc.Signals = ch
	}
	if rc.Server.Procs > 1 {
		return runGroup(ctx, rc)
	}
	s, err := target.Start(rc.Server)
	if err != nil {
		return err
	}
	ctl, err := serveControl(rc.ControlAddr, rc.Server.ControlToken, rc.Stderr, ControlHandler(s))
	if err != nil {
		s.Shutdown(target.Abrupt)
		return err
	}
	defer ctl.stop()
	ready := s.Ready()
	for {
		select {
		case <-ready:
			ready = nil
			line := childproc.ReadyLine{Ready: true, Addr: s.Addr().String(), PID: os.Getpid(), Control: ctl.addr, Token: rc.Server.ControlToken, T: s.ReadyAt()}
			if err := childproc.WriteReady(rc.Stdout, line); err != nil {
				s.Shutdown(target.Abrupt)
				return err
			}
		case sig := <-rc.Signals:
			if modeFor(sig) == target.Abrupt && rc.Exit != nil {
				rc.Exit(0)
			}
			go s.Shutdown(modeFor(sig))
		case <-ctx.Done():
			go s.Shutdown(target.Graceful)
		case <-s.Done():
			return nil
		}
	}
}

// runGroup runs Server.Procs child processes as a Group and controls them.
func runGroup(ctx context.Context, rc RunConfig) error {
	member := rc.Server
	member.ControlToken = "" // each process its own (Start)
	g, err := Start(ctx, Config{Spawn: rc.Spawn, Procs: rc.Server.Procs, Config: member})
	if err != nil {
		return err
	}
	defer g.Close()
	ctl, err := serveControl(rc.ControlAddr, rc.Server.ControlToken, rc.Stderr, g.Handler())
	if err != nil {
		return err
	}
	defer ctl.stop()
	line := childproc.ReadyLine{Ready: true, Addr: g.Addr(), PID: os.Getpid(), Control: ctl.addr, Token: rc.Server.ControlToken}
	for _, p := range g.Procs() {
		line.Children = append(line.Children, p.Line)
		if p.Ready.After(line.T) {
			line.T = p.Ready
		}
	}
	if err := childproc.WriteReady(rc.Stdout, line); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- g.Wait() }()
	for {
		select {
		case sig := <-rc.Signals:
			g.Signal(signalFor(modeFor(sig)))
		case <-ctx.Done():
			g.Signal(syscall.SIGTERM)
		case err := <-exited:
			return err
		}
	}
}

// modeFor maps a signal to a shutdown: SIGUSR1 is abrupt, the rest
// graceful.
func modeFor(sig os.Signal) target.ShutdownMode {
	if sig == syscall.SIGUSR1 {
		return target.Abrupt
	}
	return target.Graceful
}

// signalFor is the signal that asks a target process for mode.
func signalFor(mode target.ShutdownMode) os.Signal {
	if mode == target.Abrupt {
		return syscall.SIGUSR1
	}
	return syscall.SIGTERM
}

// controlServer is the HTTP server of the control API.
type controlServer struct {
	*http.Server
	addr string
}

// serveControl serves h on addr behind the token, Host and Origin checks
// of controlapi.Guard, warning on warn when addr is beyond loopback.
func serveControl(addr, token string, warn io.Writer, h http.Handler) (*controlServer, error) {
	ln, err := controlapi.Listen(addr, warn)
	if err != nil {
		return nil, fmt.Errorf("target: control API: %w", err)
	}
	hs := &http.Server{Handler: controlapi.Guard(h, ln.Addr().String(), token), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "target: control API:", err)
		}
	}()
	return &controlServer{Server: hs, addr: ln.Addr().String()}, nil
}

// stop closes the control API after the answers in flight (a /shutdown's
// 202) went out.
func (c *controlServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.Shutdown(ctx)
}

// storeNeedsOneProc refuses a message-protocol target of several
// processes on a store they cannot share: rooms fan out across processes
// only through a shared store's feed (store.Feed, store.CheckShared).
func storeNeedsOneProc(procs int, cfg target.Config) error {
	if procs > 1 && cfg.Store != "" {
		if err := store.CheckShared(cfg.Store); err != nil {
			return spec.Errorf("Server.Procs", "%v", err)
		}
	}
	return nil
}
