package drill

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stampede-dev/stampede/loadgen"
)

// connectedAt returns live counters whose connected count is what
// counts(elapsed since start) says.
func connectedAt(start time.Time, counts func(time.Duration) int64) func() loadgen.Stats {
	return func() loadgen.Stats { return loadgen.Stats{Connected: counts(time.Since(start))} }
}

// TestDeployGate: the deploy command runs only when the share of the
// fleet is connected at its time (a report up to reportLag late counts);
// otherwise the run is stopped with a *NotConnectedError, the command
// never starts, and the check says why.
func TestDeployGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		min     float64
		counts  func(time.Duration) int64
		started bool
	}{
		{"connected", 0, func(time.Duration) int64 { return 95 }, true},
		{"reported late", 0, func(d time.Duration) int64 { return map[bool]int64{true: 90}[d >= 2500*time.Millisecond] }, true},
		{"down", 0, func(time.Duration) int64 { return 0 }, false},
		{"short of 90%", 0, func(time.Duration) int64 { return 89 }, false},
		{"short of 100%", 1, func(time.Duration) int64 { return 99 }, false},
		{"half is enough", 0.5, func(time.Duration) int64 { return 50 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "deployed")
				var stopped atomic.Pointer[error]
				start := time.Now()
				d := &Deploy{Command: "touch " + file, At: 2 * time.Second,
					gate: fleetGate{clients: 100, min: tc.min, stop: func(err error) { stopped.Store(&err) }}}
				d.ReadFleet(connectedAt(start, tc.counts))
				d.Run(t.Context(), start)
				_, err := os.Stat(file)
				if ran := err == nil; ran != tc.started {
					t.Fatalf("command ran: %v, want %v (%v)", ran, tc.started, d.Checks(nil))
				}
				if tc.started {
					return
				}
				var nc *NotConnectedError
				if p := stopped.Load(); p == nil || !errors.As(*p, &nc) {
					t.Fatalf("run not stopped with a NotConnectedError: %v", p)
				}
				if nc.At != d.At+reportLag || nc.Clients != 100 {
					t.Errorf("stopped at %s of %d clients; want %s of 100", nc.At, nc.Clients, d.At+reportLag)
				}
				c := d.Checks(nil)
				if len(c) != 1 || c[0].Pass || !strings.Contains(c[0].Detail, "not started: the fleet is not connected") || len(d.Events()) != 0 {
					t.Errorf("checks %+v events %+v; want a failed deploy check saying why, no event", c, d.Events())
				}
			})
		})
	}
}

// TestOutageWatchGate: a deploy by hand waits for the fleet until the end
// of its ramp and HandDeployGrace: a fleet that got there goes on, one
// that did not stops the run and fails the outage check with the reason.
func TestOutageWatchGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		counts  func(time.Duration) int64
		stopped bool
	}{
		{"connected during the ramp", func(d time.Duration) int64 { return int64(min(100, d/(50*time.Millisecond))) }, false},
		{"never", func(time.Duration) int64 { return 3 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stopped error
				start := time.Now()
				w := &OutageWatch{gate: fleetGate{clients: 100, byHand: true, stop: func(err error) { stopped = err }},
					deadline: rampEnd(100, 20) + HandDeployGrace}
				w.ReadFleet(connectedAt(start, tc.counts))
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				w.Run(ctx, start)
				if (stopped != nil) != tc.stopped {
					t.Fatalf("stopped: %v, want %v", stopped, tc.stopped)
				}
				if !tc.stopped {
					return
				}
				if at := time.Since(start); at != 15*time.Second {
					t.Errorf("stopped at %s; want at the ramp's end (5s) and 10s", at)
				}
				c := w.Checks(nil)
				if c[0].Pass || !strings.Contains(c[0].Detail, "3 of 100 clients (3%) at 15.0s, short of the 90%") || !strings.Contains(c[0].Detail, "do not deploy now") {
					t.Errorf("check %+v; want it failed with the figures", c[0])
				}
			})
		})
	}
}

// TestDeployInterrupted: after the user's Ctrl-C the deploy command under
// way is let finish (it exits 0 and passes); a second Ctrl-C stops it and
// the drill says the service may be down.
func TestDeployInterrupted(t *testing.T) {
	for _, second := range []bool{false, true} {
		t.Run(map[bool]string{false: "let finish", true: "second Ctrl-C"}[second], func(t *testing.T) {
			dir := t.TempDir()
			started, finished := filepath.Join(dir, "started"), filepath.Join(dir, "finished")
			interrupt, abort := make(chan struct{}), make(chan struct{})
			var log bytes.Buffer
			d := &Deploy{Command: "touch " + started + "; sleep 1; touch " + finished, Log: &syncWriter{w: &log},
				Interrupted: interrupt, Abort: abort}
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
					time.Sleep(10 * time.Millisecond)
				}
				close(interrupt) // the user's Ctrl-C ends the run's context too
				cancel()
				if second {
					time.Sleep(200 * time.Millisecond)
					close(abort)
				}
			}()
			d.Run(ctx, time.Now())
			_, err := os.Stat(finished)
			c := d.Checks(nil)[0]
			if second {
				if err == nil || c.Pass || !strings.Contains(c.Detail, "interrupted a second time: the service may be down") ||
					!strings.Contains(log.String(), "the service may be down; check it now") {
					t.Errorf("finished %v, check %+v, log:\n%s\nwant it stopped, failed, the service said to be maybe down", err == nil, c, log.String())
				}
				return
			}
			if err != nil || !c.Pass || !strings.Contains(log.String(), "waiting up to 2m0s for it to finish") {
				t.Errorf("finished: %v, check %+v, log:\n%s\nwant it let finish, passed, the wait said", err, c, log.String())
			}
		})
	}
}
