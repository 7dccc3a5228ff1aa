// Package track counts message loss and duplicates over a whole fleet, after
// the run, from what every loadgen process saw of the message protocol
// (docs/metrics.md "Messages": lost = ACKed but never delivered to a member;
// dup_delivered = delivered to a member more than once).
//
// No single process can count them: a message's sender and the members of
// its room may live in different worker processes. So each process keeps a
// Record, records are merged by the coordinator (results.Report.Merge), and
// Count runs once on the merged Record:
//
//	process A: Record{rooms: seq->message, ACKed seqs; clients: received seqs} ─┐
//	process B: Record{...}                                                       ├─ Merge ─> Count ─> Counts
//	process C: Record{...}                                                       ┘
//
// A message is known by its key, a number the sender derives from its
// message ID (for stampede's own IDs: the sender's client ID << 32 | the
// sender's message counter). Keys, not seqs, decide what a client got: a
// message the server stored twice under two seqs (the server's dedupe off,
// a resend after a lost ACK) and delivered under both is one message
// delivered twice, while receiving either copy means it was not lost.
//
// A Record crosses between processes in chunks of bounded size (Chunks),
// which Merge puts together again in any order.
//
// It is a leaf package so results can hold a Record without importing the
// loadgen.
package track

import (
	"cmp"
	"slices"
)

// Record is what one loadgen process (or the merge of several) saw of the
// message protocol: per room, every seq it learnt (from an ACK to one of its
// senders or a delivery to one of its members) with its message key; per
// client, which seqs it received. Its JSON form is compact (see Uints).
type Record struct {
	// Rooms maps a room's name to what was seen in it.
	Rooms map[string]*Room `json:"rooms"`
	// Clients lists the clients of the process(es), in any order.
	Clients []Client `json:"clients"`
	// Conflicts counts seqs seen with two different message keys: the
	// server assigned one seq to two messages (a server bug).
	Conflicts uint64 `json:"conflicts"`
}

// Room is one room's messages as a process saw them.
type Room struct {
	// Seqs lists every seq seen in the room, ascending.
	Seqs Uints `json:"seqs"`
	// Keys holds the message key of each entry of Seqs (KeyUnknown for a
	// message ID that is not stampede's).
	Keys Uints `json:"keys"`
	// Acked lists the seqs of Seqs that an ACK gave to their sender,
	// ascending: the messages the server promised to keep.
	Acked Uints `json:"acked"`
}

// KeyUnknown is the key of a message whose ID is not one stampede makes
// (another sender's): it counts by seq, never as a duplicate by ID.
const KeyUnknown = ^uint64(0)

// Key returns the message key of message number n (from 1) of client id.
func Key(id uint32, n uint32) uint64 { return uint64(id)<<32 | uint64(n) }

// Sender returns the client ID in a message key.
func Sender(key uint64) uint32 { return uint32(key >> 32) }

// Client is one client's view of its room.
type Client struct {
	// ID is the client's ID.
	ID uint32 `json:"id"`
	// Room is the room it joined.
	Room string `json:"room"`
	// Joined is true once the client joined its room; a client that never
	// did expects nothing.
	Joined bool `json:"joined"`
	// Join is its join point: it expects the room's messages with a seq
	// above Join.
	Join uint64 `json:"join"`
	// Synced is true when the client ended the run connected and synced
	// (joined again, and resumed where resume is on). Count holds it to
	// every ACKed message of the room above Join when, besides, its
	// Horizon reached the room's last ACKed seq (it caught up). Otherwise
	// it could not have received what was sent after it went away, or
	// what was still on its way to it, and it expects only the messages
	// up to Horizon.
	Synced bool `json:"synced"`
	// Horizon is the highest seq the client saw (delivered, ACKed to it,
	// or named by joined or resumed); it bounds what a client that did
	// not catch up expects.
	Horizon uint64 `json:"horizon"`
	// Recv lists the seqs the client received, ascending, each once.
	Recv Uints `json:"recv"`
	// SameSeq counts deliveries of a seq the client had already received.
	SameSeq uint64 `json:"same_seq"`
	// Part marks one part of a client whose Recv was cut across chunks
	// (Chunks): Merge unites the parts of one ID into one client, their
	// Recv united and SameSeq summed.
	Part bool `json:"part,omitempty"`
}

// Merge adds o into r. Rooms are united seq by seq; clients are appended
// (each client lives in one process), but for the parts of one client cut
// by Chunks, which are united. o is left as it was: a room new to r is
// copied, so merging into it later does not change o's.
func (r *Record) Merge(o *Record) {
	if o == nil {
		return
	}
	if r.Rooms == nil {
		r.Rooms = make(map[string]*Room, len(o.Rooms))
	}
	for name, or := range o.Rooms {
		cur, ok := r.Rooms[name]
		if !ok {
			cp := *or // merge replaces the slices, never writes into them
			r.Rooms[name] = &cp
			continue
		}
		r.Conflicts += cur.merge(or)
	}
	var parts map[uint32]int // index in r.Clients of each client part
	for _, c := range o.Clients {
		if !c.Part {
			r.Clients = append(r.Clients, c)
			continue
		}
		if parts == nil {
			parts = map[uint32]int{}
			for i := range r.Clients {
				if r.Clients[i].Part {
					parts[r.Clients[i].ID] = i
				}
			}
		}
		if i, ok := parts[c.ID]; ok {
			p := &r.Clients[i]
			p.Recv = union(p.Recv, c.Recv)
			p.SameSeq += c.SameSeq
			continue
		}
		parts[c.ID] = len(r.Clients)
		r.Clients = append(r.Clients, c)
	}
	r.Conflicts += o.Conflicts
}

// merge unites o into m and returns the number of seqs the two saw with
// different keys (m's key is kept).
func (m *Room) merge(o *Room) (conflicts uint64) {
	seqs := make(Uints, 0, max(len(m.Seqs), len(o.Seqs)))
	keys := make(Uints, 0, cap(seqs))
	i, j := 0, 0
	for i < len(m.Seqs) || j < len(o.Seqs) {
		switch {
		case j == len(o.Seqs) || (i < len(m.Seqs) && m.Seqs[i] < o.Seqs[j]):
			seqs, keys = append(seqs, m.Seqs[i]), append(keys, m.Keys[i])
			i++
		case i == len(m.Seqs) || o.Seqs[j] < m.Seqs[i]:
			seqs, keys = append(seqs, o.Seqs[j]), append(keys, o.Keys[j])
			j++
		default:
			if m.Keys[i] != o.Keys[j] {
				conflicts++
			}
			seqs, keys = append(seqs, m.Seqs[i]), append(keys, m.Keys[i])
			i++
			j++
		}
	}
	m.Seqs, m.Keys = seqs, keys
	m.Acked = union(m.Acked, o.Acked)
	return conflicts
}

// sortClients orders clients by ID, for deterministic output.
func sortClients(cs []Client) {
	slices.SortFunc(cs, func(a, b Client) int { return cmp.Compare(a.ID, b.ID) })
}
