package sim

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
)

// tlsStorm is a wss:// fleet of 1,000 on one target process, restarted at
// 10 s with the given schedule text, its server srv.
func tlsStorm(t *testing.T, srv spec.Server, sched string) Config {
	srv.Procs, srv.Backlog = max(srv.Procs, 1), 128
	return Config{
		Client:   spec.Client{Clients: 1000, Ramp: 500, Policy: backoff.MustParse("exp:initial=1s,max=30s,jitter=0.5,spread=100ms-500ms"), Seed: 7},
		Server:   srv,
		Duration: 40 * time.Second, Schedule: mustSchedule(t, sched), ScheduleText: sched,
	}
}

// handshakesAfter counts the timeline's TLS handshakes from offset from.
func handshakesAfter(res *Result, from time.Duration) (full, resumed int) {
	for i, b := range res.Report.Timeline {
		if time.Duration(i)*results.Tick >= from {
			full += int(b.TLSFull)
			resumed += int(b.TLSResumed)
		}
	}
	return full, resumed
}

// Which reconnects resume after a restart: every one when the ticket keys
// survive it (a key file, or a rolling restart, whose other processes hold
// the generation's keys), none when the whole group restarts with its keys
// in memory, with tickets off, or with clients that keep no session; the
// first connects are all full.
func TestTLSResumeAfterRestart(t *testing.T) {
	const abrupt = "at 10s restart abrupt down=1s"
	for _, c := range []struct {
		name        string
		srv         spec.Server
		sched       string
		noResume    bool
		wantResumed bool
	}{
		{"keys in memory", spec.Server{TLS: true}, abrupt, false, false},
		{"keys in a file", spec.Server{TLSTicketKeys: "keys"}, abrupt, false, true},
		{"rolling restart, keys in memory", spec.Server{TLS: true, Procs: 2}, "at 10s restart abrupt procs=rolling down=1s", false, true},
		{"no tickets", spec.Server{TLS: true, TLSNoTickets: true}, abrupt, false, false},
		{"clients keep no session", spec.Server{TLSTicketKeys: "keys"}, abrupt, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tlsStorm(t, c.srv, c.sched)
			cfg.TLSNoResume = c.noResume
			res, _ := run(t, cfg)
			firstFull, firstResumed := handshakesAfter(res, 0)
			full, resumed := handshakesAfter(res, 10*time.Second)
			firstFull, firstResumed = firstFull-full, firstResumed-resumed
			if firstFull != cfg.Clients || firstResumed != 0 {
				t.Errorf("first connects: %d full, %d resumed; want %d full", firstFull, firstResumed, cfg.Clients)
			}
			// Every client reconnects at least once (a rolling restart moves
			// some twice), every handshake of the one kind.
			same, other := full, resumed
			if c.wantResumed {
				same, other = resumed, full
			}
			if same < cfg.Clients || other != 0 {
				t.Errorf("reconnects: %d full, %d resumed; want all %v, at least %d", full, resumed, map[bool]string{true: "resumed", false: "full"}[c.wantResumed], cfg.Clients)
			}
		})
	}
}

// A ws:// run counts no handshakes and charges none: its timeline has no
// TLS column set, and a config without TLS records no TLS costs.
func TestTLSNoneForWS(t *testing.T) {
	cfg := tlsStorm(t, spec.Server{}, "at 10s restart abrupt down=1s")
	res, _ := run(t, cfg)
	if full, resumed := handshakesAfter(res, 0); full+resumed != 0 {
		t.Errorf("ws:// run counted %d full and %d resumed handshakes", full, resumed)
	}
	if res.Config.TLSCost != (TLSCosts{}) {
		t.Errorf("ws:// run recorded TLS costs %+v", res.Config.TLSCost)
	}
}

// The target pays each handshake's cost at its kind: a process that must
// do 1,000 full handshakes of 10 ms each after the restart needs 10 s of
// them, and comes back no sooner; resumed ones of 1 ms take a tenth.
func TestTLSChargesHandshakes(t *testing.T) {
	costs := TLSCosts{Full: 10 * time.Millisecond, Resumed: time.Millisecond}
	r100 := func(srv spec.Server) float64 {
		cfg := tlsStorm(t, srv, "at 10s restart abrupt down=1s")
		cfg.Duration, cfg.TLSCost = 60*time.Second, costs
		_, sum := run(t, cfg)
		r := recovery(t, sum)
		if r.R100S == nil {
			t.Fatalf("%+v: never all back", srv)
		}
		return *r.R100S
	}
	lost, kept := r100(spec.Server{TLS: true}), r100(spec.Server{TLSTicketKeys: "keys"})
	t.Logf("R100: keys lost %.2fs, kept %.2fs", lost, kept)
	if lost < 10 {
		t.Errorf("R100 with 1,000 full handshakes of 10 ms: %.2fs, want at least 10s", lost)
	}
	if kept < 1 || kept > lost/3 {
		t.Errorf("R100 with 1,000 resumed handshakes of 1 ms: %.2fs, want at least 1s and well under %.2fs", kept, lost)
	}
}

// With Cores, the handshakes take the machine's CPU: the target's at
// least every handshake's server cost, the loadgen's the client's, by
// kind, counted off the same run's timeline.
func TestTLSChargesCores(t *testing.T) {
	costs := TLSCosts{Full: 5 * time.Millisecond, Resumed: time.Millisecond, ClientFull: 2 * time.Millisecond, ClientResumed: 500 * time.Microsecond}
	for _, srv := range []spec.Server{{TLS: true}, {TLSTicketKeys: "keys"}} {
		cfg := tlsStorm(t, srv, "at 10s restart abrupt down=1s")
		cfg.Cores, cfg.TLSCost, cfg.Duration = 2, costs, 60*time.Second
		res, _ := run(t, cfg)
		full, resumed := handshakesAfter(res, 0)
		server := time.Duration(full)*costs.Full + time.Duration(resumed)*costs.Resumed
		client := time.Duration(full)*costs.ClientFull + time.Duration(resumed)*costs.ClientResumed
		if res.CPU.Target < server || res.CPU.Target > server+time.Duration(full+resumed)*(DefaultCPUCosts.Accept+DefaultCPUCosts.Close)+time.Second {
			t.Errorf("%+v: target CPU %v for %d full and %d resumed handshakes; want their %v and little more", srv, res.CPU.Target, full, resumed, server)
		}
		if res.CPU.Loadgen < client {
			t.Errorf("%+v: loadgen CPU %v; want at least the handshakes' %v", srv, res.CPU.Loadgen, client)
		}
	}
}

// DefaultTLSCosts are the calibrated figures: an RSA-2048 full handshake
// costs the server several times an ECDSA P-256 one and several times a
// resumed one; an unknown kind (a user's own certificate) is ECDSA's.
func TestDefaultTLSCosts(t *testing.T) {
	e, r := DefaultTLSCosts("ecdsa-p256"), DefaultTLSCosts("rsa-2048")
	if !(r.Full > 2*e.Full && r.Full > 2*r.Resumed) {
		t.Errorf("rsa-2048 %+v, ecdsa-p256 %+v: want RSA's full handshake well above ECDSA's and its resumed one", r, e)
	}
	if DefaultTLSCosts("") != e || e.ClientFull <= 0 || e.ClientResumed <= 0 {
		t.Errorf("the default kind's costs %+v, want ecdsa-p256's %+v, every one measured", DefaultTLSCosts(""), e)
	}
}
