package loadgen

import (
	"cmp"
	"slices"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/track"
)

// The tracker: what each stampede client saw, kept compactly during the run
// and turned into a track.Record at its end. Loss and duplicates are not
// counted here: a room's senders and members may be in other processes, so
// the records are merged first (results.Report.Merge) and counted once
// (Tally).
//
// Memory: a reactor keeps, per room it has members of, a log of every seq
// seen (ACKed to one of its senders or delivered to one of its members)
// with its message key: about 40 bytes per message of the room. Each client
// keeps a bitset of what it received, indexed by position in its room's log
// (dense whatever the seqs look like): one bit per message of its room. For
// 2,000 clients in rooms of 10 at 2 msg/s for 60 s that is 240,000 logged
// messages (about 10 MB) and 150 bytes per client.

// roomLogs holds a reactor's room logs by room number.
type roomLogs map[uint32]*roomLog

// of returns room k's log, creating it.
func (ls roomLogs) of(k uint32) *roomLog {
	l := ls[k]
	if l == nil {
		l = &roomLog{idx: map[uint64]uint32{}}
		ls[k] = l
	}
	return l
}

// roomLog is every seq of one room a reactor's clients saw, in the order
// first seen.
type roomLog struct {
	idx       map[uint64]uint32 // seq -> position
	seqs      []uint64
	keys      []uint64 // message key at each position
	acked     bitset   // positions an ACK gave to their sender
	conflicts uint64   // seqs seen with two different keys
}

// add records that seq holds the message with key (acked: as told by an
// ACK to its sender) and returns the seq's position.
func (l *roomLog) add(seq, key uint64, acked bool) uint32 {
	i, ok := l.idx[seq]
	if !ok {
		i = uint32(len(l.seqs))
		l.idx[seq] = i
		l.seqs = append(l.seqs, seq)
		l.keys = append(l.keys, key)
	} else if l.keys[i] != key {
		l.conflicts++
	}
	if acked {
		l.acked.set(i)
	}
	return i
}

// room returns the log as a track.Room, sorted by seq.
func (l *roomLog) room() *track.Room {
	order := make([]uint32, len(l.seqs))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(l.seqs[a], l.seqs[b]) })
	m := &track.Room{Seqs: make(track.Uints, len(order)), Keys: make(track.Uints, len(order))}
	for n, i := range order {
		m.Seqs[n], m.Keys[n] = l.seqs[i], l.keys[i]
		if l.acked.has(i) {
			m.Acked = append(m.Acked, l.seqs[i])
		}
	}
	return m
}

// bitset is a growable set of small integers.
type bitset []uint64

func (b *bitset) set(i uint32) {
	w := int(i / 64)
	if w >= len(*b) {
		*b = append(*b, make([]uint64, w+1-len(*b))...)
	}
	(*b)[w] |= 1 << (i % 64)
}

func (b bitset) has(i uint32) bool {
	w := int(i / 64)
	return w < len(b) && b[w]&(1<<(i%64)) != 0
}

// finish writes the reactor's track record and the messages still waiting
// for an ACK into its report, at the end of the run while the clients'
// states are still those of the end.
func (h *stampedeMode) finish(r *reactor) {
	r.rec.mu.Lock() // a drain may be reading the report
	defer r.rec.mu.Unlock()
	msgs := &r.rec.rep.Messages
	rec := &track.Record{Rooms: make(map[string]*track.Room, len(h.rooms))}
	for k, l := range h.rooms {
		rec.Rooms[h.names.roomName(k)] = l.room()
		rec.Conflicts += l.conflicts
	}
	for j := range h.m {
		m := &h.m[j]
		msgs.Unacked += uint64(len(m.queue))
		if !m.joined {
			continue
		}
		id := r.id(int32(j))
		k := h.names.roomOf(id)
		c := track.Client{
			ID:      id,
			Room:    h.names.roomName(k),
			Joined:  true,
			Join:    m.join,
			Synced:  m.st == synced && r.clients[j].state == stConnected,
			Horizon: m.last,
			SameSeq: uint64(m.sameSeq),
		}
		if l := h.rooms[k]; l != nil {
			for w, word := range m.recv {
				for b := 0; word != 0; b, word = b+1, word>>1 {
					if word&1 != 0 {
						c.Recv = append(c.Recv, l.seqs[w*64+b])
					}
				}
			}
			slices.Sort(c.Recv)
		}
		rec.Clients = append(rec.Clients, c)
	}
	r.rec.rep.Track = rec
}

// Tally counts loss and duplicates from a report's Track once every
// process's report has been merged into it, and sets Messages.Expected,
// Received, Lost, DupDelivered, LossClients, Unsynced and SeqConflicts.
// It must run once, on the whole fleet's report: a process's own report
// does not see the senders or members in other processes. A report without
// a Track (not the stampede mode) is left as it is.
func Tally(rep *results.Report) {
	if rep == nil || rep.Track == nil {
		return
	}
	c := rep.Track.Count()
	m := &rep.Messages
	m.Expected, m.Received, m.Lost, m.DupDelivered = c.Expected, c.Received, c.Lost, c.DupDelivered
	m.LossClients, m.Unsynced, m.SeqConflicts = uint64(c.LossClients), uint64(c.Unsynced), c.Conflicts
}
