package track

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// bigRecord is a record of rooms and clients with loss, duplicates,
// unsynced clients and one client that received far more than the rest.
func bigRecord(seed uint64) *Record {
	rnd := rand.New(rand.NewPCG(seed, 1))
	r := &Record{Rooms: map[string]*Room{}, Conflicts: 2}
	const rooms, perRoom, msgs = 12, 9, 3000
	for k := range rooms {
		name := string(rune('a' + k))
		m := &Room{}
		for s := uint64(1); s <= msgs; s++ {
			sender := uint32(k*perRoom + rnd.IntN(perRoom))
			m.Seqs = append(m.Seqs, s*3) // gaps between seqs
			m.Keys = append(m.Keys, Key(sender, uint32(s)))
			if rnd.IntN(10) > 0 {
				m.Acked = append(m.Acked, s*3)
			}
		}
		r.Rooms[name] = m
		for c := range perRoom {
			id := uint32(k*perRoom + c)
			cl := Client{ID: id, Room: name, Joined: true, Synced: c%4 != 0, Join: uint64(rnd.IntN(30)), Horizon: msgs * 3, SameSeq: uint64(c % 3)}
			for s := uint64(1); s <= msgs; s++ {
				if rnd.IntN(50) > 0 && Sender(m.Keys[s-1]) != id {
					cl.Recv = append(cl.Recv, s*3)
				}
			}
			r.Clients = append(r.Clients, cl)
		}
	}
	// One client that received 40,000 seqs: cut into parts.
	big := Client{ID: 9999, Room: "z", Joined: true, Synced: true, SameSeq: 5}
	z := &Room{}
	for s := uint64(1); s <= 40_000; s++ {
		z.Seqs, z.Keys, z.Acked = append(z.Seqs, s), append(z.Keys, Key(1, uint32(s))), append(z.Acked, s)
		if s%1000 != 0 {
			big.Recv = append(big.Recv, s)
		}
	}
	r.Rooms["z"] = z
	r.Clients = append(r.Clients, big)
	return r
}

// TestChunks: a record cut into chunks of a limit, sent through JSON and
// merged back in any order, counts exactly as the record itself.
func TestChunks(t *testing.T) {
	want := bigRecord(1).Count()
	if want.Lost == 0 || want.DupDelivered == 0 || want.Unsynced == 0 || want.Conflicts != 2 {
		t.Fatalf("the record should have loss, duplicates, unsynced clients and conflicts: %+v", want)
	}
	for _, limit := range []int{64 << 10, 256 << 10, 1 << 20} {
		r := bigRecord(1)
		chunks, err := r.Chunks(limit)
		if err != nil {
			t.Fatal(err)
		}
		if limit == 64<<10 && len(chunks) < 4 {
			t.Errorf("limit %d: %d chunks", limit, len(chunks))
		}
		merged := &Record{}
		for _, i := range rand.New(rand.NewPCG(uint64(limit), 2)).Perm(len(chunks)) { // any order
			c := chunks[i]
			b, err := json.Marshal(c)
			if err != nil || len(b) > limit {
				t.Fatalf("limit %d: chunk of %d bytes (%v)", limit, len(b), err)
			}
			var back Record
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			merged.Merge(&back)
		}
		if got := merged.Count(); got != want {
			t.Errorf("limit %d: merged chunks count %+v, want %+v", limit, got, want)
		}
		if len(merged.Clients) != len(r.Clients) {
			t.Errorf("limit %d: %d clients after merging, want %d (parts not united)", limit, len(merged.Clients), len(r.Clients))
		}
		if again := r.Count(); again != want {
			t.Errorf("Chunks changed the record: %+v", again)
		}
	}
	if _, err := bigRecord(1).Chunks(1000); err == nil {
		t.Error("a limit below one part was accepted")
	}
}

// TestMergeLeavesSource: merging a record into another and then a third
// into the result does not change the first's rooms (Merge used to keep
// the first's *Room and merge into it).
func TestMergeLeavesSource(t *testing.T) {
	a := &Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}}, 1)}}
	b := &Record{Rooms: map[string]*Room{"r": room([][2]uint64{{2, b1}}, 2)}}
	m := &Record{}
	m.Merge(a)
	m.Merge(b)
	if got := a.Rooms["r"]; len(got.Seqs) != 1 || len(got.Acked) != 1 {
		t.Errorf("the merged-in room changed: %+v", got)
	}
	if got := m.Rooms["r"]; len(got.Seqs) != 2 || len(got.Acked) != 2 {
		t.Errorf("merged room %+v", got)
	}
}
