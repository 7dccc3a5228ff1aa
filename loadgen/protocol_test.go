package loadgen

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/track"
	"github.com/stampede-dev/stampede/spec"
)

// restarter is a message-protocol server the storm test can crash: mute
// (store, answer nothing), kill every connection and the listener, listen
// again on the same port with the same store.
type restarter interface {
	URL() string
	Mute()
	Kill()
	Restart()
	// DupSuppressed is the server's count of msgs ACKed without storing.
	DupSuppressed() int
}

// stampedeStorm runs a seeded stampede fleet of 24 clients in 4 rooms
// against srv and crashes the server once every client has had messages
// ACKed: 100 ms mute (stored, not ACKed or delivered), kill, 300 ms down,
// restart. Reconnects are spread over 20..380 ms so that clients are away
// at different times. It returns the tallied report.
func stampedeStorm(t *testing.T, srv restarter, tweak func(*Config)) *results.Report {
	t.Helper()
	rep, _ := stampedeStormSplit(t, srv, 1, tweak)
	return rep
}

// stampedeStormSplit is stampedeStorm with the fleet split into parts
// fleets of consecutive client IDs sharing one start, as worker processes
// do: each part's report makes the trip through JSON, the reports are
// merged and the merge is tallied. It also returns each part's own counts.
func stampedeStormSplit(t *testing.T, srv restarter, parts int, tweak func(*Config)) (*results.Report, []track.Counts) {
	t.Helper()
	return stampedeStormPrep(t, srv, parts, tweak, nil)
}

// stampedeStormPrep is stampedeStormSplit calling prepare (when not nil) on
// each part's fleet before it runs.
func stampedeStormPrep(t *testing.T, srv restarter, parts int, tweak func(*Config), prepare func(*Fleet)) (*results.Report, []track.Counts) {
	t.Helper()
	const n = 24
	start := time.Now()
	base := Config{Client: spec.Client{URL: srv.URL(), Clients: n, Mode: spec.ModeStampede, Rooms: 4, MsgRate: 20, Seed: 7,
		Policy:      backoff.Policy{Kind: backoff.Fixed, Initial: 200 * time.Millisecond, Jitter: 0.9},
		QuietPeriod: 1500 * time.Millisecond, Reactors: 2}, Start: start,
	}
	if tweak != nil {
		tweak(&base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fleets := make([]*Fleet, parts)
	reps := make([]*results.Report, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range fleets {
		cfg := base
		cfg.FirstID, cfg.Clients = uint32(p*n/parts), (p+1)*n/parts-p*n/parts
		f, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fleets[p] = f
		if prepare != nil {
			prepare(f)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[p], errs[p] = f.Run(ctx)
		}()
	}
	stats := func() Stats {
		var s Stats
		for _, f := range fleets {
			st := f.Stats()
			s.Add(&st)
		}
		return s
	}
	deadline := time.Now().Add(2 * time.Second)
	for s := stats(); s.Connected != n || s.MsgAcked < 2*n; s = stats() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for all connected and sending: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Mute()
	time.Sleep(100 * time.Millisecond)
	srv.Kill()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	if end, _ := ctx.Deadline(); time.Until(end) < base.QuietPeriod+time.Second {
		t.Fatalf("the restart ended %s before the run's end: too late for the clients to resend before the quiet period", time.Until(end))
	}
	wg.Wait()
	merged := results.NewReport(start, 0)
	merged.Processes = 0
	var own []track.Counts
	for p, rep := range reps {
		if errs[p] != nil {
			t.Fatal(errs[p])
		}
		b, err := json.Marshal(rep.Track)
		if err != nil {
			t.Fatal(err)
		}
		rep.Track = nil
		if err := json.Unmarshal(b, &rep.Track); err != nil {
			t.Fatal(err)
		}
		own = append(own, rep.Track.Count())
		if err := merged.Merge(rep); err != nil {
			t.Fatal(err)
		}
	}
	Tally(merged)
	t.Logf("messages %+v; server dup_suppressed %d", merged.Messages, srv.DupSuppressed())
	return merged, own
}

// TestStampedeSplit: a fleet split over three processes sees, once their
// records are merged, what one process would: every room has members in
// each part, and a part alone knows neither the other parts' ACKs nor
// their members' gaps.
func TestStampedeSplit(t *testing.T) {
	srv := newMemServer(t, false)
	rep, own := stampedeStormSplit(t, srv, 3, func(c *Config) { c.NoResume = true })
	m := rep.Messages
	if m.Lost == 0 || m.Expected == 0 || m.Received+m.Lost != m.Expected || rep.Processes != 3 || rep.Clients != 24 {
		t.Errorf("merged: lost %d, expected %d, received %d, %d processes, %d clients", m.Lost, m.Expected, m.Received, rep.Processes, rep.Clients)
	}
	var sum track.Counts
	for _, c := range own {
		sum.Expected += c.Expected
		sum.Lost += c.Lost
	}
	// Alone, a part expects only its own senders' messages.
	if sum.Expected >= m.Expected || sum.Lost >= m.Lost {
		t.Errorf("parts alone expect %d and lose %d, the merge %d and %d: want less alone", sum.Expected, sum.Lost, m.Expected, m.Lost)
	}
}

// TestStampedeRecovery is the acceptance in small: with the retry
// queue, resume and dedupe nothing is lost or delivered twice across a
// crash; switching each off shows its loss or duplicates, counted.
func TestStampedeRecovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noDedupe bool
		tweak    func(*Config)
		check    func(t *testing.T, m results.Messages, srv *memServer)
	}{
		{
			name: "everything on",
			check: func(t *testing.T, m results.Messages, srv *memServer) {
				serverDups := srv.DupSuppressed()
				if m.Lost != 0 || m.DupDelivered != 0 || m.Unsynced != 0 || m.SeqConflicts != 0 {
					t.Errorf("lost %d, dup_delivered %d, unsynced %d, conflicts %d: want 0", m.Lost, m.DupDelivered, m.Unsynced, m.SeqConflicts)
				}
				if m.Retried == 0 || m.Resumed == 0 || m.DupSuppressed == 0 || m.Expected == 0 {
					t.Errorf("retried %d, resumed %d, dup_suppressed %d, expected %d: want > 0", m.Retried, m.Resumed, m.DupSuppressed, m.Expected)
				}
				// Every dedupe of the server is a resend after a resume,
				// which the client recognises by its seq.
				if int(m.DupSuppressed) != serverDups {
					t.Errorf("client counted %d suppressed duplicates, server %d", m.DupSuppressed, serverDups)
				}
				if m.Received != m.Expected {
					t.Errorf("received %d of %d", m.Received, m.Expected)
				}
			},
		},
		{
			// Rejoining "from now" misses what was sent while away.
			name:  "no resume",
			tweak: func(c *Config) { c.NoResume = true },
			check: func(t *testing.T, m results.Messages, _ *memServer) {
				if m.Lost == 0 || m.LossClients == 0 {
					t.Errorf("lost %d in %d clients, want > 0", m.Lost, m.LossClients)
				}
				if m.Resumed != 0 || m.DupDelivered != 0 {
					t.Errorf("resumed %d, dup_delivered %d: want 0", m.Resumed, m.DupDelivered)
				}
			},
		},
		{
			// The muted messages were stored; their resends are stored
			// again under new seqs and reach the members twice.
			name:     "server without dedupe",
			noDedupe: true,
			check: func(t *testing.T, m results.Messages, srv *memServer) {
				serverDups := srv.DupSuppressed()
				// Each message stored twice reaches the 5 other members of
				// its room (6 clients) twice: the original by replay, the
				// copy live or by replay.
				if again := srv.storedAgain(); m.DupDelivered == 0 || m.DupDelivered != uint64(5*again) {
					t.Errorf("dup_delivered %d, want 5 x %d stored twice (> 0)", m.DupDelivered, again)
				}
				if m.Lost != 0 || m.DupSuppressed != 0 || serverDups != 0 {
					t.Errorf("lost %d, dup_suppressed %d (server %d): want 0", m.Lost, m.DupSuppressed, serverDups)
				}
			},
		},
		{
			name:  "no retry queue",
			tweak: func(c *Config) { c.NoRetryQueue = true },
			check: func(t *testing.T, m results.Messages, _ *memServer) {
				if m.UnackedDropped == 0 || m.Retried != 0 {
					t.Errorf("unacked_dropped %d, retried %d: want > 0 and 0", m.UnackedDropped, m.Retried)
				}
				// Dropped messages were never ACKed: not promised, not lost.
				if m.Lost != 0 || m.DupDelivered != 0 {
					t.Errorf("lost %d, dup_delivered %d: want 0", m.Lost, m.DupDelivered)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newMemServer(t, tc.noDedupe)
			rep := stampedeStorm(t, srv, tc.tweak)
			m := rep.Messages
			if m.Sent == 0 || m.Acked == 0 || m.Delivered == 0 {
				t.Errorf("sent %d, acked %d, delivered %d: want > 0", m.Sent, m.Acked, m.Delivered)
			}
			// Every message sent is ACKed, still queued, or dropped.
			if m.Sent != m.Acked+m.Unacked+m.UnackedDropped {
				t.Errorf("sent %d != acked %d + unacked %d + unacked_dropped %d", m.Sent, m.Acked, m.Unacked, m.UnackedDropped)
			}
			if rep.RTT.TotalCount() != int64(m.Acked) {
				t.Errorf("%d RTTs for %d ACKs", rep.RTT.TotalCount(), m.Acked)
			}
			if rep.Resume.TotalCount() != int64(m.Resumed) {
				t.Errorf("%d resume latencies for %d resumes", rep.Resume.TotalCount(), m.Resumed)
			}
			tc.check(t, m, srv)
		})
	}
}

// TestStampedeBadFrame: a frame from the server that does not decode is
// counted and skipped; the connection goes on.
func TestStampedeBadFrame(t *testing.T) {
	srv := newMemServer(t, false)
	srv.mu.Lock()
	srv.garbage = true
	srv.mu.Unlock()
	f, err := New(Config{Client: spec.Client{URL: srv.url, Clients: 4, Mode: spec.ModeStampede, Rooms: 1, MsgRate: 20, QuietPeriod: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rep, err := f.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	Tally(rep)
	m := rep.Messages
	if m.BadFrames != 4 || m.Lost != 0 || m.Acked == 0 || m.Received != m.Expected {
		t.Errorf("bad frames %d, lost %d, acked %d, received %d of %d: want 4, 0, > 0, all", m.BadFrames, m.Lost, m.Acked, m.Received, m.Expected)
	}
	if s := f.Stats(); s.DisconnectCount() != 0 {
		t.Errorf("%d disconnects, want 0", s.DisconnectCount())
	}
}
