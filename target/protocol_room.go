package target

import (
	"context"
	"sync/atomic"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/store"
)

// room is one room of a Protocol. Its goroutine (run) owns members, head
// and buf; everything else reaches it through ops.
type room struct {
	p    *Protocol
	name string
	ops  chan roomOp

	members   map[*Conn]*member
	head      uint64 // latest seq of the room, once headKnown
	headKnown bool
	buf       []byte // one frame's payload being encoded
	out       outbox
	batch     []roomOp
	entries   []store.Entry

	// Set by the store's feed (Protocol.follow), read by run: the highest
	// seq other processes are known to have stored, and a wake-up.
	notified atomic.Uint64
	recheck  atomic.Bool // the feed may have missed updates: read the store
	kick     chan struct{}
}

// member is a connection in a room.
type member struct {
	pc   *protoConn
	last uint64 // highest seq this connection was sent (or told of) in the room
}

type opKind uint8

const (
	opMsg opKind = iota
	opJoin
	opResume
	opLeave
)

// roomOp is one operation for a room's goroutine.
type roomOp struct {
	kind  opKind
	c     *Conn
	pc    *protoConn
	id    string // opMsg
	body  []byte // opMsg
	after uint64 // opResume: last_seq
}

// enqueue hands op to the room, waiting while its queue is full; dropped
// once the Protocol is closing.
func (r *room) enqueue(op roomOp) {
	select {
	case r.ops <- op:
	case <-r.p.ctx.Done():
	}
}

// run performs the room's operations in order until the Protocol closes.
func (r *room) run() {
	defer r.p.wg.Done()
	var next *roomOp
	for {
		var op roomOp
		if next != nil {
			op, next = *next, nil
		} else {
			select {
			case op = <-r.ops:
			case <-r.kick:
				r.catchUp(0)
				continue
			case <-r.p.ctx.Done():
				return
			}
		}
		if op.kind != opMsg {
			r.handle(op)
			continue
		}
		// Group commit at the room level: every msg already waiting goes
		// into one AppendBatch.
		r.batch = append(r.batch[:0], op)
	gather:
		for len(r.batch) < maxRoomBatch {
			select {
			case o := <-r.ops:
				if o.kind != opMsg {
					next = &o
					break gather
				}
				r.batch = append(r.batch, o)
			default:
				break gather
			}
		}
		r.appendBatch(r.batch)
		clear(r.batch) // drop the bodies
	}
}

func (r *room) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.p.ctx, storeTimeout)
}

// fail closes c with 1011 after a store error: its message was not ACKed.
func (r *room) fail(c *Conn, err error) {
	c.srv.sendClose(c, ws.StatusInternalServerError, "protocol: store: "+err.Error())
}

// appendBatch stores batch, ACKs every message to its sender and delivers
// the new ones to the other members.
func (r *room) appendBatch(batch []roomOp) {
	r.entries = r.entries[:0]
	for _, op := range batch {
		r.entries = append(r.entries, store.Entry{ID: op.id, Body: op.body})
	}
	ctx, cancel := r.ctx()
	res, err := r.p.st.AppendBatch(ctx, r.name, r.entries)
	cancel()
	clear(r.entries)
	if err != nil {
		for _, op := range batch {
			r.fail(op.c, err)
		}
		return
	}
	for i, op := range batch {
		seq := res[i].Seq
		if res[i].Dup {
			if r.p.feed && seq > r.head {
				// Stored earlier by another process (or by one that
				// died before its ACK), and not yet delivered here:
				// the members, the sender included, get every seq
				// through it first. The sender takes the ack's seq as
				// its last seen; an ack above what it was sent would
				// make its next resume skip the seqs in between.
				r.catchUp(seq)
			}
			r.buf = protocol.AppendAckDup(r.buf[:0], op.id, seq)
			r.out.add(op.c, r.buf, outAck)
			op.c.srv.stats.dupSuppressed.Add(1)
			continue
		}
		if r.p.feed && seq > r.head+1 {
			// Other processes stored seqs before this one: they go out
			// first, so every member sees the room in seq order.
			r.catchUp(seq - 1)
		}
		r.buf = protocol.AppendAck(r.buf[:0], op.id, seq)
		r.out.add(op.c, r.buf, outAck)
		if m := r.members[op.c]; m != nil && m.last < seq {
			m.last = seq // the sender learns seq from its ack
		}
		r.deliver(seq, op.id, op.body, op.c)
	}
	r.out.flush(nil)
}

// handle performs a join, resume or leave.
func (r *room) handle(op roomOp) {
	switch op.kind {
	case opLeave:
		delete(r.members, op.c)
		if len(r.members) == 0 && r.p.feed {
			// Nobody here follows the room now: its head goes stale as
			// other processes append, so the next join reads it again.
			r.headKnown = false
		}
		return
	case opJoin:
		if op.pc.closed.Load() {
			return
		}
		if !r.headKnown {
			ctx, cancel := r.ctx()
			h, err := r.p.st.Head(ctx, r.name)
			cancel()
			if err != nil {
				r.fail(op.c, err)
				return
			}
			r.head, r.headKnown = max(r.head, h), true
		}
		r.members[op.c] = &member{pc: op.pc, last: r.head}
		r.buf = protocol.AppendJoined(r.buf[:0], r.name, r.head)
		r.out.add(op.c, r.buf, outOther)
		r.out.flush(nil)
	case opResume:
		if op.pc.closed.Load() {
			return
		}
		through, ok := r.replay(op.c, op.after)
		if !ok {
			r.out.flush(nil)
			return
		}
		r.members[op.c] = &member{pc: op.pc, last: through}
		r.buf = protocol.AppendResumed(r.buf[:0], r.name, through)
		r.out.add(op.c, r.buf, outOther)
		if r.out.flush(op.c) {
			op.c.srv.stats.resumes.Add(1)
		}
	}
}

// replay sends c every kept message after `after`, preceded by a
// resume_gap if some are gone, and returns the seq it is now served
// through: the room's head (lower than after only when the client claims
// seqs the store never had, e.g. after the store was wiped).
func (r *room) replay(c *Conn, after uint64) (uint64, bool) {
	st := &c.srv.stats
	for {
		ctx, cancel := r.ctx()
		msgs, through, gap, err := r.p.st.Since(ctx, r.name, after, replayPage)
		cancel()
		if err != nil {
			r.fail(c, err)
			return 0, false
		}
		if gap {
			to := through
			if len(msgs) > 0 {
				to = msgs[0].Seq - 1
			}
			r.buf = protocol.AppendResumeGap(r.buf[:0], r.name, after+1, to)
			r.out.add(c, r.buf, outOther)
			st.resumeGaps.Add(1)
		}
		for _, m := range msgs {
			r.buf = protocol.AppendDeliver(r.buf[:0], r.name, m.Seq, m.ID, m.Body)
			r.out.add(c, r.buf, outReplay)
		}
		if len(msgs) < replayPage {
			// Not cut short by the page: through is the head. Members
			// already here are owed what other processes stored up to
			// it before the head moves there.
			if r.p.feed && r.headKnown && through > r.head {
				r.catchUp(through)
			}
			r.head, r.headKnown = max(r.head, through), true
			return through, true
		}
		after = through
	}
}

// notify records that seq of the room is stored (by any process) and
// wakes the room's goroutine; it never blocks the feed.
func (r *room) notify(seq uint64, recheck bool) {
	if recheck {
		r.recheck.Store(true)
	}
	for {
		old := r.notified.Load()
		if seq <= old || r.notified.CompareAndSwap(old, seq) {
			break
		}
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// catchUp delivers to the room's members what other processes stored
// after r.head, read from the store (the source of truth: the feed only
// says that there is something to read), through upTo (0: all of it).
func (r *room) catchUp(upTo uint64) {
	if !r.headKnown || len(r.members) == 0 {
		r.headKnown = false
		r.recheck.Store(false)
		return
	}
	if upTo == 0 && !r.recheck.Swap(false) && r.notified.Load() <= r.head {
		return
	}
	defer r.out.flush(nil)
	for {
		limit := replayPage
		if upTo > 0 {
			if r.head >= upTo {
				return
			}
			limit = int(min(uint64(limit), upTo-r.head))
		}
		ctx, cancel := r.ctx()
		msgs, through, _, err := r.p.st.Since(ctx, r.name, r.head, limit)
		cancel()
		if err != nil {
			// The members are owed messages this process cannot read
			// now: close them with 1011, as for any store failure; they
			// resume from their last seq, replayed from the store. Going
			// on would move the head past what they never got.
			for c := range r.members {
				r.fail(c, err)
			}
			clear(r.members)
			r.headKnown = false
			return
		}
		for _, m := range msgs {
			r.deliver(m.Seq, m.ID, m.Body, nil)
		}
		if len(msgs) == 0 && through > r.head && (upTo == 0 || through <= upTo) {
			r.head = through // retention dropped them: nothing to send
		}
		if len(msgs) < limit {
			return
		}
	}
}

// deliver sends message seq to every member not yet sent it, except
// from, its sender on this process, and advances the room's head.
func (r *room) deliver(seq uint64, id string, body []byte, from *Conn) {
	if seq > r.head {
		r.head = seq
	}
	r.buf = protocol.AppendDeliver(r.buf[:0], r.name, seq, id, body)
	for c, m := range r.members {
		if c == from || m.last >= seq {
			continue
		}
		m.last = seq
		r.out.add(c, r.buf, outDeliver)
	}
}
