package track

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// Clients 1, 2 and 3 share room "r". Message keys: a1 is client 1's first
// message, b1 client 2's.
var (
	a1 = Key(1, 1)
	b1 = Key(2, 1)
)

// room builds a room from (seq, key) pairs and the ACKed seqs.
func room(pairs [][2]uint64, acked ...uint64) *Room {
	m := &Room{Acked: acked}
	for _, p := range pairs {
		m.Seqs = append(m.Seqs, p[0])
		m.Keys = append(m.Keys, p[1])
	}
	return m
}

// synced is a client that ended the run synced and caught up: it saw the
// room's seqs through 9 (a resumed through 9, say), above every room here.
func synced(id uint32, recv ...uint64) Client {
	return Client{ID: id, Room: "r", Joined: true, Synced: true, Horizon: 9, Recv: recv}
}

func TestCount(t *testing.T) {
	twoAcked := room([][2]uint64{{1, a1}, {2, b1}}, 1, 2)
	for _, tc := range []struct {
		name string
		rec  Record
		want Counts
	}{
		{
			// Each client gets the other clients' messages, never its own.
			name: "everything delivered",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				synced(1, 2), synced(2, 1), synced(3, 1, 2),
			}},
			want: Counts{Expected: 4, Received: 4},
		},
		{
			// Client 3 got seq 2 but never seq 1, sent to it before.
			name: "a gap is lost",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				synced(1, 2), synced(2, 1), synced(3, 2),
			}},
			want: Counts{Expected: 4, Received: 3, Lost: 1, LossClients: 1},
		},
		{
			// Client 3 is connected and synced but saw nothing above
			// seq 1: seq 2 may still be on its way (the fan-out lags).
			// It is not caught up, and held only to what it saw.
			name: "behind the room's last ACK is unsynced, not lost",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				synced(1, 2), synced(2, 1), {ID: 3, Room: "r", Joined: true, Synced: true, Horizon: 1, Recv: Uints{1}},
			}},
			want: Counts{Expected: 3, Received: 3, Unsynced: 1},
		},
		{
			// Behind, and a gap below what it saw: the gap is lost.
			name: "a gap below a lagging client's horizon is lost",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}, {2, b1}, {3, Key(1, 2)}}, 1, 2, 3)}, Clients: []Client{
				{ID: 3, Room: "r", Joined: true, Synced: true, Horizon: 2, Recv: Uints{2}},
			}},
			want: Counts{Expected: 2, Received: 1, Lost: 1, LossClients: 1, Unsynced: 1},
		},
		{
			// Its own ACK at seq 2 tells it everything before was sent.
			name: "the horizon of an own ACK",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, b1}, {2, a1}}, 1, 2)}, Clients: []Client{
				{ID: 1, Room: "r", Joined: true, Synced: true, Horizon: 2},
			}},
			want: Counts{Expected: 1, Lost: 1, LossClients: 1},
		},
		{
			name: "the same seq twice is a duplicate",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				{ID: 3, Room: "r", Joined: true, Synced: true, Recv: Uints{1, 2}, SameSeq: 1},
			}},
			want: Counts{Expected: 2, Received: 2, DupDelivered: 1},
		},
		{
			// The server stored a1 twice (dedupe off): seq 3 is a resend
			// whose ACK the sender got; seq 1's ACK was lost.
			name: "one message under two seqs is a duplicate",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}, {2, b1}, {3, a1}}, 2, 3)}, Clients: []Client{
				synced(3, 1, 2, 3),
			}},
			want: Counts{Expected: 2, Received: 2, DupDelivered: 1},
		},
		{
			// Receiving the unACKed copy of a message is receiving it.
			name: "the other copy counts as received",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}, {3, a1}}, 3)}, Clients: []Client{
				synced(3, 1),
			}},
			want: Counts{Expected: 1, Received: 1},
		},
		{
			name: "nothing at or before the join point",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				{ID: 3, Room: "r", Joined: true, Join: 1, Synced: true, Recv: Uints{2}},
			}},
			want: Counts{Expected: 1, Received: 1},
		},
		{
			// A client away at the end is held to what it saw before.
			name: "an unsynced client expects up to its horizon",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				{ID: 3, Room: "r", Joined: true, Horizon: 1, Recv: Uints{1}},
			}},
			want: Counts{Expected: 1, Received: 1, Unsynced: 1},
		},
		{
			name: "a client that never joined expects nothing",
			rec: Record{Rooms: map[string]*Room{"r": twoAcked}, Clients: []Client{
				{ID: 3, Room: "r"},
			}},
			want: Counts{},
		},
		{
			// Only ACKed messages are promised.
			name: "an unACKed message is not expected",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}, {2, b1}}, 2)}, Clients: []Client{
				synced(3, 2),
			}},
			want: Counts{Expected: 1, Received: 1},
		},
		{
			name: "a foreign message counts by seq",
			rec: Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, KeyUnknown}, {2, KeyUnknown}}, 1, 2)}, Clients: []Client{
				synced(3, 2),
			}},
			want: Counts{Expected: 2, Received: 1, Lost: 1},
		},
		{
			name: "conflicts are passed on",
			rec:  Record{Conflicts: 2},
			want: Counts{Conflicts: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.Count(); got != tc.want {
				t.Errorf("Count() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCountNil(t *testing.T) {
	var r *Record
	if got := r.Count(); got != (Counts{}) {
		t.Errorf("nil Count() = %+v", got)
	}
}

// TestMerge splits the "a gap is lost" fleet over two processes: the
// sender's ACK is in one, the receiver in the other.
func TestMerge(t *testing.T) {
	p1 := &Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}}, 1)}, Clients: []Client{synced(1, 2)}}
	p2 := &Record{Rooms: map[string]*Room{"r": room([][2]uint64{{2, b1}}, 2)}, Clients: []Client{synced(2, 1)}}
	p3 := &Record{Rooms: map[string]*Room{"r": room([][2]uint64{{1, a1}, {2, b1}})}, Clients: []Client{synced(3, 2)}}
	var m Record
	m.Merge(p1)
	m.Merge(p2)
	m.Merge(p3)
	m.Merge(nil)
	want := room([][2]uint64{{1, a1}, {2, b1}}, 1, 2)
	if got := m.Rooms["r"]; !reflect.DeepEqual(got, want) {
		t.Errorf("merged room %+v, want %+v", got, want)
	}
	if got, want := m.Count(), (Counts{Expected: 4, Received: 3, Lost: 1, LossClients: 1}); got != want {
		t.Errorf("Count() = %+v, want %+v", got, want)
	}
	// A seq two processes saw with different messages is a conflict.
	m.Merge(&Record{Rooms: map[string]*Room{"r": room([][2]uint64{{2, a1}})}})
	if m.Conflicts != 1 {
		t.Errorf("conflicts %d, want 1", m.Conflicts)
	}
}

func TestUintsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Uints
		json string
	}{
		{"empty", Uints{}, `""`},
		{"ascending", Uints{1, 2, 3, 10}, `"AgICDg=="`},
		{"descending and repeats", Uints{5, 5, 1}, `"CgAH"`},
		{"extremes", Uints{0, math.MaxUint64, 0, 1 << 63}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.json != "" && string(b) != tc.json {
				t.Errorf("Marshal = %s, want %s", b, tc.json)
			}
			var out Uints
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if len(out) != len(tc.in) || (len(out) > 0 && !reflect.DeepEqual(out, tc.in)) {
				t.Errorf("round trip %v -> %s -> %v", tc.in, b, out)
			}
		})
	}
	for _, bad := range []string{`3`, `"!!"`, `"gA=="`} { // not a string, not base64, a truncated varint
		var out Uints
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %v", bad, out)
		}
	}
}

// TestRecordJSON checks a record survives the trip to the coordinator.
func TestRecordJSON(t *testing.T) {
	in := &Record{
		Rooms:     map[string]*Room{"r": room([][2]uint64{{1, a1}, {2, b1}}, 1, 2)},
		Clients:   []Client{{ID: 3, Room: "r", Joined: true, Join: 0, Synced: false, Horizon: 2, Recv: Uints{1, 2}, SameSeq: 1}},
		Conflicts: 4,
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Record
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&out, in) {
		t.Errorf("round trip:\n%s\ngave %+v", b, out)
	}
}

func FuzzUints(f *testing.F) {
	f.Add(`""`)
	f.Add(`"AgICDg=="`)
	f.Add(`"gA=="`)
	f.Fuzz(func(t *testing.T, s string) {
		var u Uints
		if err := json.Unmarshal([]byte(s), &u); err != nil {
			return
		}
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var v Uints
		if err := json.Unmarshal(b, &v); err != nil || len(u) != len(v) || (len(u) > 0 && !reflect.DeepEqual(u, v)) {
			t.Fatalf("%s -> %v -> %s -> %v %v", s, u, b, v, err)
		}
	})
}
