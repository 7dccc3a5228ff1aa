package store

// roomIndex is the embedded store's in-memory state of one room: its
// latest seq, the retained messages, and the dedupe index.
type roomIndex struct {
	head uint64
	// msgs holds consecutive seqs ending at head; the kept window is its
	// last `retention` elements (the slice may hold up to twice that, so
	// trimming is amortised).
	msgs []Message
	// ids maps every message ID ever stored in the room to its seq.
	ids map[string]uint64
}

// add appends the message with seq head+1.
func (r *roomIndex) add(m Message, dedupe bool, retention int) {
	r.head = m.Seq
	r.msgs = append(r.msgs, m)
	if len(r.msgs) >= 2*retention {
		kept := make([]Message, retention, 2*retention)
		copy(kept, r.msgs[len(r.msgs)-retention:])
		r.msgs = kept
	}
	if dedupe {
		if _, ok := r.ids[m.ID]; !ok {
			r.ids[m.ID] = m.Seq
		}
	}
}

// since implements Store.Since on the room.
func (r *roomIndex) since(after uint64, limit, retention int) (out []Message, through uint64, gap bool) {
	kept := r.msgs
	if len(kept) > retention {
		kept = kept[len(kept)-retention:]
	}
	if after >= r.head {
		return nil, r.head, false
	}
	if len(kept) == 0 {
		return nil, r.head, true
	}
	first := kept[0].Seq
	i := 0
	if after+1 < first {
		gap = true
	} else {
		i = int(after + 1 - first)
	}
	kept = kept[i:]
	through = r.head
	if limit > 0 && len(kept) > limit {
		kept = kept[:limit]
		through = kept[limit-1].Seq
	}
	return append([]Message(nil), kept...), through, gap
}
