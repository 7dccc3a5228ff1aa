package loadgen

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/track"
	"github.com/stampede-dev/stampede/spec"
)

func TestNames(t *testing.T) {
	start := time.Unix(0, 1_700_000_000_123_456_789)
	for _, tc := range []struct {
		name  string
		rooms int
		id    uint32
		room  string // the room's name
	}{
		{"rooms of 10 by default", 0, 25, "cwyvpeni7w9h.r2"},
		{"id mod rooms", 200, 1999, "cwyvpeni7w9h.r199"},
		{"first client", 200, 0, "cwyvpeni7w9h.r0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNames(start, tc.rooms)
			if got := n.roomName(n.roomOf(tc.id)); got != tc.room {
				t.Errorf("room of %d = %q, want %q", tc.id, got, tc.room)
			}
		})
	}
	n := newNames(start, 0)
	for _, key := range []uint64{track.Key(0, 1), track.Key(1999, 42), track.Key(^uint32(0), 7)} {
		id := n.appendID(nil, key)
		if got, ok := n.key(id); !ok || got != key {
			t.Errorf("key(%q) = %x %v, want %x", id, got, ok, key)
		}
	}
	if id := string(n.appendID(nil, track.Key(3, 9))); id != "cwyvpeni7w9h.0000000300000009" {
		t.Errorf("message ID %q", id)
	}
	for _, bad := range []string{
		"", "cwyvpeni7w9h.000000030000000", // short
		"cwyvpeni7w9i.0000000300000009",  // another run
		"cwyvpeni7w9h-0000000300000009",  // separator
		"cwyvpeni7w9h.000000030000000G",  // not hex
		"cwyvpeni7w9h.ffffffffffffffff",  // KeyUnknown itself
		"cwyvpeni7w9h.00000003000000090", // long
	} {
		if k, ok := n.key([]byte(bad)); ok {
			t.Errorf("key(%q) = %x, want not ours", bad, k)
		}
	}
}

func TestRoomLog(t *testing.T) {
	l := &roomLog{idx: map[uint64]uint32{}}
	// Seen out of order, one of them twice and one with another key.
	if i := l.add(5, 50, false); i != 0 {
		t.Errorf("first position %d", i)
	}
	l.add(3, 30, true)
	l.add(5, 50, true)
	l.add(4, 41, false)
	l.add(4, 40, false) // conflict: the first key stays
	m := l.room()
	want := &track.Room{Seqs: track.Uints{3, 4, 5}, Keys: track.Uints{30, 41, 50}, Acked: track.Uints{3, 5}}
	if !equalRoom(m, want) {
		t.Errorf("room %+v, want %+v", m, want)
	}
	if l.conflicts != 1 {
		t.Errorf("conflicts %d, want 1", l.conflicts)
	}
}

func equalRoom(a, b *track.Room) bool {
	eq := func(x, y track.Uints) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return eq(a.Seqs, b.Seqs) && eq(a.Keys, b.Keys) && eq(a.Acked, b.Acked)
}

func TestBitset(t *testing.T) {
	var b bitset
	for _, i := range []uint32{0, 63, 64, 1000} {
		if b.has(i) {
			t.Errorf("has %d before set", i)
		}
		b.set(i)
		if !b.has(i) {
			t.Errorf("has not %d after set", i)
		}
	}
	if b.has(1) || b.has(999) || b.has(5000) {
		t.Error("has a bit never set")
	}
	if len(b) != 16 {
		t.Errorf("%d words for bit 1000, want 16", len(b))
	}
}

// TestTrackerSize measures the tracker's memory and its record's size on
// the wire for the sizing case: 2,000 clients in rooms of 10, each
// sending 2 msg/s for 60 s (240,000 messages, each delivered to 9 members),
// and checks the count on it. It is skipped with -short and under the race
// detector: it builds the state of a whole run (about a second).
func TestTrackerSize(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds a whole run's tracker state; sizes mean nothing under the race detector")
	}
	const clients, rooms, perClient = 2000, 200, 120
	cfg := Config{Client: spec.Client{Rooms: rooms, MsgSize: spec.DefaultMsgSize, MsgRate: 2}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h := newStampedeMode(&cfg, clients)
	h.names = newNames(time.Unix(1, 0), rooms)
	seqs := make([]uint64, rooms)
	for n := uint32(1); n <= perClient; n++ {
		for id := uint32(0); id < clients; id++ {
			k := h.names.roomOf(id)
			seqs[k]++
			l := h.rooms.of(k)
			key := track.Key(id, n)
			l.add(seqs[k], key, true)
			for other := k; other < clients; other += rooms {
				if other != id {
					m := &h.m[other]
					m.recv.set(l.add(seqs[k], key, false))
				}
			}
		}
	}
	for j := range h.m {
		h.m[j].joined, h.m[j].st = true, synced
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := after.HeapAlloc - before.HeapAlloc
	r := &reactor{f: &Fleet{}, nr: 1, clients: make([]client, clients), rec: newRecorder(time.Unix(1, 0), clients, 0, false)}
	for j := range r.clients {
		r.clients[j].state = stConnected
	}
	h.finish(r)
	b, err := json.Marshal(r.rec.rep.Track)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	Tally(r.rec.rep)
	t.Logf("tracker state %.1f MB, record on the wire %.1f MB, Tally %s", float64(live)/1e6, float64(len(b))/1e6, time.Since(t0).Round(time.Millisecond))
	want := results.Messages{Expected: clients * perClient * 9, Received: clients * perClient * 9}
	if got := r.rec.rep.Messages; got.Expected != want.Expected || got.Received != want.Received || got.Lost != 0 || got.DupDelivered != 0 {
		t.Errorf("messages %+v", got)
	}
	if live > 64<<20 || len(b) > 16<<20 {
		t.Errorf("tracker state %d bytes, record %d bytes: want under 64 MiB and 16 MiB", live, len(b))
	}
}
