package track

import "slices"

// Counts are the fleet's delivery figures, summed over clients.
type Counts struct {
	// Expected counts the messages clients should have received: for each
	// joined client, every distinct ACKed message of its room with a seq
	// above its join point, other clients' only, and for a client that
	// did not end the run caught up (Unsynced) only those up to its
	// Horizon.
	Expected uint64 `json:"expected"`
	// Received counts the expected messages that arrived, under any seq.
	Received uint64 `json:"received"`
	// Lost is Expected minus Received: ACKed, never delivered to a member.
	Lost uint64 `json:"lost"`
	// DupDelivered counts deliveries of a message to a client beyond the
	// first: the same seq again, or the same message (key) under another
	// seq.
	DupDelivered uint64 `json:"dup_delivered"`
	// LossClients is the number of clients that lost at least one message.
	LossClients int `json:"loss_clients"`
	// Unsynced is the number of joined clients that did not end the run
	// caught up: away, still joining or resuming, or connected but behind
	// their room's last ACKed message (the fan-out still on its way to
	// them when the records were taken). What lies above the highest seq
	// such a client saw is not held against it: it could not tell a
	// message on its way from one that will never come. A gap below that
	// seq is lost all the same: the server sends a room's seqs to a
	// member in increasing order.
	Unsynced int `json:"unsynced"`
	// Conflicts counts seqs seen with two different messages.
	Conflicts uint64 `json:"conflicts"`
}

// Count computes the delivery figures of a merged record. It does not
// modify r (beyond sorting its clients by ID).
func (r *Record) Count() Counts {
	if r == nil {
		return Counts{}
	}
	cnt := Counts{Conflicts: r.Conflicts}
	sortClients(r.Clients)
	empty := &Room{}
	var recvKeys, expKeys []uint64
	for i := range r.Clients {
		c := &r.Clients[i]
		if !c.Joined {
			continue
		}
		room := r.Rooms[c.Room]
		if room == nil {
			room = empty
		}
		horizon, caughtUp := catchUp(c, room)
		if !caughtUp {
			cnt.Unsynced++
		}
		// The keys of what the client received; seqs the room does not
		// know (or foreign messages) count by seq only.
		recvKeys = recvKeys[:0]
		w := room.walker()
		for _, s := range c.Recv {
			if k, ok := w.key(s); ok && k != KeyUnknown {
				recvKeys = append(recvKeys, k)
			}
		}
		slices.Sort(recvKeys)
		n := len(recvKeys)
		recvKeys = slices.Compact(recvKeys)
		cnt.DupDelivered += c.SameSeq + uint64(n-len(recvKeys))

		expKeys = expKeys[:0]
		w = room.walker()
		for _, s := range room.Acked {
			if s <= c.Join || (!caughtUp && s > horizon) {
				continue
			}
			k, _ := w.key(s)
			if k == KeyUnknown {
				// Not stampede's message: only its seq can tell.
				cnt.Expected++
				if contains(c.Recv, s) {
					cnt.Received++
				}
				continue
			}
			if Sender(k) == c.ID {
				continue
			}
			expKeys = append(expKeys, k)
		}
		slices.Sort(expKeys)
		expKeys = slices.Compact(expKeys)
		lost := uint64(0)
		for _, k := range expKeys {
			if !contains(recvKeys, k) {
				lost++
			}
		}
		cnt.Expected += uint64(len(expKeys))
		cnt.Received += uint64(len(expKeys)) - lost
		if lost > 0 {
			cnt.LossClients++
		}
	}
	cnt.Lost = cnt.Expected - cnt.Received
	return cnt
}

// catchUp returns the highest seq client c saw in room, and whether it
// caught up: synced at the end and not behind the room's last ACKed
// message. The server sends a member a room's seqs in increasing order,
// so everything up to the highest seq the client saw was sent to it
// before that one: what is missing below it is lost. Above it, a message
// may be on its way (the fan-out lags under load), so a client behind the
// room's last ACK is held only to what it saw, like one that ended away.
func catchUp(c *Client, room *Room) (horizon uint64, caughtUp bool) {
	horizon = c.Horizon
	if n := len(c.Recv); n > 0 {
		horizon = max(horizon, c.Recv[n-1])
	}
	caughtUp = c.Synced
	if n := len(room.Acked); n > 0 && horizon < room.Acked[n-1] {
		caughtUp = false
	}
	return horizon, caughtUp
}

// walker looks up the keys of ascending seqs in one pass over the room.
type walker struct {
	m *Room
	i int
}

func (m *Room) walker() walker { return walker{m: m} }

// key returns the message key of seq s; s must not be below the previous
// call's.
func (w *walker) key(s uint64) (uint64, bool) {
	seqs := w.m.Seqs
	for w.i < len(seqs) && seqs[w.i] < s {
		w.i++
	}
	if w.i == len(seqs) || seqs[w.i] != s {
		return 0, false
	}
	return w.m.Keys[w.i], true
}
