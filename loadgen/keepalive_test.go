package loadgen

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// blackholeRun connects n clients through the fault proxy, blackholes it
// for hole, lifts it, and returns the report and the event on the run's
// time axis. cfg's URL, Clients, Policy and Seed are set here.
func blackholeRun(t *testing.T, cfg Config, n int, hole time.Duration, after func(*Fleet)) (*results.Report, results.Event) {
	t.Helper()
	srv := newTestServer(t, false, nil)
	p, err := proxy.Start(proxy.Config{Upstream: srv.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg.URL, cfg.Clients, cfg.Policy, cfg.Seed = "ws://"+p.Addr()+"/ws", n, fast, 1
	cfg.HandshakeTimeout = 300 * time.Millisecond // an upgrade into the blackhole is never answered
	cfg.Start = time.Now()
	run := start(t, cfg)
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == int64(n) }, run.f)
	srv.waitHeld(n)

	ev := results.Event{Kind: "proxy", Mode: "blackhole", Start: time.Since(cfg.Start)}
	p.Set(fault.Set{Blackhole: true})
	if after != nil {
		after(run.f)
	} else {
		time.Sleep(hole)
	}
	p.Set(fault.Set{})
	ev.End = time.Since(cfg.Start)
	ev.Ready = ev.End
	if after != nil {
		waitFor(t, 20*time.Second, "all back", func(s Stats) bool { return s.Connected == int64(n) }, run.f)
	}
	return run.stop(t), ev
}

// TestKeepaliveBlackhole: a proxy that swallows every byte and closes
// nothing kills the fleet's connections silently; the clients' keepalive
// pings go unanswered, each closes its connection as ping_timeout,
// reconnects once the fault lifts, and the event's recovery counts them
// as gone down and back, none as never down (docs/metrics.md "Keepalive").
func TestKeepaliveBlackhole(t *testing.T) {
	const n = 20
	cfg := Config{Client: spec.Client{PingInterval: 200 * time.Millisecond, PongTimeout: 500 * time.Millisecond}}
	rep, ev := blackholeRun(t, cfg, n, 0, func(f *Fleet) {
		waitFor(t, 20*time.Second, "every dead connection found",
			func(s Stats) bool { return s.Disconnects[connerr.PingTimeout] >= n }, f)
	})
	b := totals(rep)
	if b.Disconnects[connerr.PingTimeout] != n || b.DisconnectCount() != n {
		t.Errorf("disconnects %v, want %d ping_timeout and nothing else", b.Disconnects, n)
	}
	recs := summary.Recoveries(rep, []results.Event{ev}, 0)
	if r := recs[0]; r.ConnectedBefore != n || r.Disconnected != n || r.Recovered != n || r.NeverDown != 0 {
		t.Errorf("recovery %+v, want %d connected before, down and back, 0 never down", r, n)
	}
}

// TestKeepaliveOffBlackhole: without the keepalive the same blackhole
// goes unnoticed: nobody goes down, and the recovery says so in
// never_down rather than passing them off as recovered clients only.
func TestKeepaliveOffBlackhole(t *testing.T) {
	const n = 10
	rep, ev := blackholeRun(t, Config{Client: spec.Client{PingInterval: -1}}, n, 1500*time.Millisecond, nil)
	if b := totals(rep); b.DisconnectCount() != 0 {
		t.Errorf("disconnects %v without keepalive; the blackhole should go unseen", b.Disconnects)
	}
	r := summary.Recoveries(rep, []results.Event{ev}, 0)[0]
	if r.ConnectedBefore != n || r.Disconnected != 0 || r.NeverDown != n {
		t.Errorf("recovery %+v, want all %d never down", r, n)
	}
}

// TestKeepaliveHealthy: pings on an idle, healthy connection are answered
// and drop nobody.
func TestKeepaliveHealthy(t *testing.T) {
	const n = 10
	srv := newTestServer(t, false, nil)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Seed: 1,
		PingInterval: 50 * time.Millisecond, PongTimeout: 400 * time.Millisecond}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	time.Sleep(1200 * time.Millisecond) // pongs not heard would drop every client in about 500 ms
	if b := totals(run.stop(t)); b.DisconnectCount() != 0 {
		t.Errorf("disconnects %v on a healthy server", b.Disconnects)
	}
}

// TestKeepaliveBlackholeWSS: wss:// clients find the blackhole the same
// way; their reconnects' TLS handshakes time out while it lasts.
func TestKeepaliveBlackholeWSS(t *testing.T) {
	const n = 5
	srv := newTLSServer(t, 0)
	p, err := proxy.Start(proxy.Config{Upstream: srv.srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	run := start(t, Config{Client: spec.Client{URL: "wss://" + p.Addr() + "/", Clients: n, Policy: fast, Seed: 1, TLSInsecure: true,
		PingInterval: 200 * time.Millisecond, PongTimeout: 500 * time.Millisecond, HandshakeTimeout: 300 * time.Millisecond}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	p.Set(fault.Set{Blackhole: true})
	waitFor(t, 20*time.Second, "every dead connection found",
		func(s Stats) bool { return s.Disconnects[connerr.PingTimeout] >= n }, run.f)
	p.Set(fault.Set{})
	waitFor(t, 20*time.Second, "all back", func(s Stats) bool { return s.Connected == n }, run.f)
	if b := totals(run.stop(t)); b.Disconnects[connerr.PingTimeout] != n || b.DisconnectCount() != n {
		t.Errorf("disconnects %v, want %d ping_timeout and nothing else", b.Disconnects, n)
	}
}

// TestKeepaliveHealthyWSS: a healthy wss:// server's pongs keep idle
// connections up.
func TestKeepaliveHealthyWSS(t *testing.T) {
	const n = 5
	srv := newTLSServer(t, 0)
	run := start(t, Config{Client: spec.Client{URL: srv.url, Clients: n, Policy: fast, Seed: 1, TLSInsecure: true,
		PingInterval: 50 * time.Millisecond, PongTimeout: 400 * time.Millisecond}})
	waitFor(t, 20*time.Second, "all connected", func(s Stats) bool { return s.Connected == n }, run.f)
	time.Sleep(1200 * time.Millisecond)
	if b := totals(run.stop(t)); b.DisconnectCount() != 0 {
		t.Errorf("disconnects %v on a healthy server", b.Disconnects)
	}
}
