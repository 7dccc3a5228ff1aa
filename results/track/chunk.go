package track

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Chunk sizes: a room is cut into parts of at most chunkSeqs seqs and a
// client's Recv into parts of at most chunkRecv seqs before the parts are
// packed into chunks. Each costs at most about 20 (room) and 14 (Recv)
// bytes of JSON per seq, so a part stays far below a chunk of a few
// hundred KiB.
const (
	chunkSeqs = 4096
	chunkRecv = 16384
)

// Chunks cuts r into records whose JSON encoding is at most limit bytes,
// so a process can send its record in bounded messages: rooms are cut by
// seq ranges (Merge unites them again), clients are packed whole, and a
// client whose Recv is too long for one chunk is cut into parts (marked
// Part, united again by Merge). Merged in any order, the chunks give the
// same Count as r. r is not modified; chunks share its slices. An error
// says limit is too small for one part.
func (r *Record) Chunks(limit int) ([]*Record, error) {
	if r == nil {
		return nil, nil
	}
	shell, err := json.Marshal(&Record{Rooms: map[string]*Room{}, Conflicts: r.Conflicts})
	if err != nil {
		return nil, err
	}
	ch := &chunker{shell: len(shell), limit: limit}
	if err := ch.addRooms(r.Rooms); err != nil {
		return nil, err
	}
	if err := ch.addClients(r.Clients); err != nil {
		return nil, err
	}
	ch.flush()
	out := ch.out
	if len(out) == 0 {
		out = append(out, &Record{Rooms: map[string]*Room{}, Clients: []Client{}})
	}
	out[0].Conflicts = r.Conflicts
	for _, c := range out { // the bound is a promise: check it
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, fmt.Errorf("track: a chunk of %d bytes, limit %d", len(b), limit)
		}
	}
	return out, nil
}

// chunker fills chunks of at most limit bytes, each an empty record of
// shell bytes and its parts, for Chunks.
type chunker struct {
	shell, limit int
	out          []*Record
	cur          *Record
	size         int
}

// flush ends the current chunk.
func (ch *chunker) flush() {
	if ch.cur != nil {
		ch.out = append(ch.out, ch.cur)
		ch.cur = nil
	}
}

// add puts one part of n bytes into the current chunk, or a new one;
// into chooses where it goes.
func (ch *chunker) add(n int, what string, into func(*Record) bool) error {
	if ch.shell+n > ch.limit {
		return fmt.Errorf("track: %s of %d bytes does not fit a chunk of at most %d bytes", what, n, ch.limit)
	}
	if ch.cur != nil && ch.size+n <= ch.limit && into(ch.cur) {
		ch.size += n
		return nil
	}
	ch.flush()
	ch.cur, ch.size = &Record{Rooms: map[string]*Room{}, Clients: []Client{}}, ch.shell+n
	if !into(ch.cur) {
		panic("track: a part refused by an empty chunk")
	}
	return nil
}

// addRooms adds the rooms by name, each in parts of chunkSeqs sequence
// numbers; a chunk holds one part of a room at most.
func (ch *chunker) addRooms(rooms map[string]*Room) error {
	names := make([]string, 0, len(rooms))
	for name := range rooms {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m := rooms[name]
		for i := 0; i == 0 || i < len(m.Seqs); i += chunkSeqs {
			j := min(i+chunkSeqs, len(m.Seqs))
			part := &Room{Seqs: m.Seqs[i:j:j], Keys: m.Keys[i:j:j], Acked: ackedIn(m, i, j)}
			b, err := json.Marshal(map[string]*Room{name: part})
			if err != nil {
				return err
			}
			err = ch.add(len(b)+1, "a room part", func(c *Record) bool {
				if _, ok := c.Rooms[name]; ok {
					return false
				}
				c.Rooms[name] = part
				return true
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// addClients adds the clients in order, each in parts of chunkRecv
// received messages.
func (ch *chunker) addClients(clients []Client) error {
	for _, c := range clients {
		for i := 0; i == 0 || i < len(c.Recv); i += chunkRecv {
			part := c
			if len(c.Recv) > chunkRecv {
				j := min(i+chunkRecv, len(c.Recv))
				part.Recv, part.Part = c.Recv[i:j:j], true
				if i > 0 {
					part.SameSeq = 0 // counted once, in the first part
				}
			}
			b, err := json.Marshal(&part)
			if err != nil {
				return err
			}
			if err := ch.add(len(b)+1, "a client", func(c *Record) bool {
				c.Clients = append(c.Clients, part)
				return true
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ackedIn returns the ACKed seqs of m within its seqs i..j-1 (all of them
// when the room has no seqs).
func ackedIn(m *Room, i, j int) Uints {
	if len(m.Seqs) == 0 {
		return m.Acked
	}
	lo, hi := m.Seqs[i], m.Seqs[j-1]
	a, _ := slices.BinarySearch(m.Acked, lo)
	b, found := slices.BinarySearch(m.Acked, hi)
	if found {
		b++
	}
	if i == 0 {
		a = 0 // ACKed seqs below every seq seen (none in a valid record) stay
	}
	if j == len(m.Seqs) {
		b = len(m.Acked)
	}
	return m.Acked[a:b:b]
}

// Validate checks what Merge and Count rely on in a record from another
// process: each room's Seqs ascending without repeats, as many Keys, and
// Acked ascending; each client's Recv ascending.
func (r *Record) Validate() error {
	asc := func(u Uints, strict bool) bool {
		for i := 1; i < len(u); i++ {
			if u[i] < u[i-1] || strict && u[i] == u[i-1] {
				return false
			}
		}
		return true
	}
	for name, m := range r.Rooms {
		switch {
		case m == nil:
			return fmt.Errorf("track: room %q is null", name)
		case len(m.Keys) != len(m.Seqs):
			return fmt.Errorf("track: room %q has %d seqs and %d keys", name, len(m.Seqs), len(m.Keys))
		case !asc(m.Seqs, true) || !asc(m.Acked, true):
			return fmt.Errorf("track: room %q: seqs or acked not ascending", name)
		}
	}
	for _, c := range r.Clients {
		if !asc(c.Recv, false) {
			return fmt.Errorf("track: client %d: recv not ascending", c.ID)
		}
	}
	return nil
}
