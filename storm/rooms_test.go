package storm_test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
)

// TestRoomsAcrossProcesses runs the message protocol on three target
// processes of one group, with a room's members spread over them by
// SO_REUSEPORT, and SIGKILLs the group twice: on each store that several
// processes share (the embedded JetStream, which the run's target agent
// hosts; Redis; PostgreSQL) every ACKed message reaches every member once
// (lost 0, dup_delivered 0). Members connected to other processes than a
// message's sender only get it through the store's feed, so a fan-out that
// stayed within a process would show as lost.
func TestRoomsAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("three target processes, two kills, per store")
	}
	for _, tc := range []struct {
		name, store, addr string
	}{
		{"jetstream", "", ""},
		{"redis", "redis://127.0.0.1:6379/0?prefix=stampede-test-" + randHex(t) + ":", "127.0.0.1:6379"},
		{"postgres", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&table=stampede_test_" + randHex(t), "127.0.0.1:5432"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.addr != "" {
				requireService(t, tc.name, tc.addr)
			}
			cfg := roomsConfig(t, tc.store)
			res := runStorm(t, cfg)
			m := res.Summary.Messages
			if res.Sizing.TargetProcs != 3 {
				t.Fatalf("%d target processes, want 3", res.Sizing.TargetProcs)
			}
			if m.Acked < 200 || m.Expected < 1000 {
				t.Fatalf("only %d ACKed, %d deliveries expected: the run did not exercise the rooms", m.Acked, m.Expected)
			}
			if m.Lost != 0 || m.DupDelivered != 0 {
				t.Fatalf("lost %d dup_delivered %d over 3 processes (acked %d, expected %d, received %d); want 0 and 0",
					m.Lost, m.DupDelivered, m.Acked, m.Expected, m.Received)
			}
			if m.Resumed == 0 {
				t.Fatal("no resume after the kills")
			}
			t.Logf("%s: acked %d, deliveries %d of %d, dup_suppressed %d, resumed %d, unsynced %d", tc.name, m.Acked, m.Received, m.Expected, m.DupSuppressed, m.Resumed, m.Unsynced)
		})
	}
}

// TestRoomsNoDedupeAcrossProcesses: with --no-dedupe, resends after the
// kills are stored again and delivered again, across processes too.
func TestRoomsNoDedupeAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("three target processes, three kills")
	}
	cfg := roomsSchedule(t, "", "every 2500ms restart kill down=500ms")
	cfg.Target.NoDedupe = true
	// A duplicate needs a kill between a message's store and its ACK
	// reaching the client, a window of milliseconds: at 2 messages/s per
	// client two kills once left none (retried 6, dup_delivered 0). Twice
	// the rate and a kill every 2.5 s (three while messages are sent;
	// the last falls in the quiet period) leave several per kill.
	cfg.Fleet.MsgRate = 4
	res := runStorm(t, cfg)
	m := res.Summary.Messages
	if m.DupDelivered == 0 {
		t.Fatalf("dup_delivered 0 with --no-dedupe (acked %d, retried %d): want duplicates", m.Acked, m.Retried)
	}
	t.Logf("--no-dedupe: retried %d, dup_delivered %d", m.Retried, m.DupDelivered)
}

// roomsConfig is a 240-client stampede-mode run in 24 rooms on three
// target processes, killed at 4 s and 8 s.
func roomsConfig(t *testing.T, store string) storm.Config {
	return roomsSchedule(t, store, "every 4s restart kill down=500ms")
}

// roomsSchedule is roomsConfig with another chaos schedule.
func roomsSchedule(t *testing.T, store, schedule string) storm.Config {
	cfg := stormConfig(t, schedule)
	cfg.Fleet.Clients = 240
	cfg.Fleet.Mode = spec.ModeStampede
	cfg.Fleet.Rooms = 24
	cfg.Fleet.MsgRate = 2
	cfg.Target.Procs = 3
	cfg.Target.Store = store
	cfg.Duration = 11 * time.Second
	return cfg
}

func randHex(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requireService skips t when name is not listening on addr, unless
// STAMPEDE_REQUIRE_SERVICES=1.
func requireService(t *testing.T, name, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s is not reachable on %s: %v; STAMPEDE_REQUIRE_SERVICES=1 requires it", name, addr, err)
	}
	t.Skipf("%s is not reachable on %s: %v; skipping", name, addr, err)
}
