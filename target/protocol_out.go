package target

import (
	"github.com/gobwas/ws"
)

// outbox gathers the frames one room operation sends, per connection, so
// that each connection gets them in one write (one syscall) however many
// messages the batch or replay holds. Frames keep their order within a
// connection. Owned by the room's goroutine.
type outbox struct {
	bufs  map[*Conn]*outBuf
	order []*Conn
	free  []*outBuf
}

// outBuf is one connection's pending frames and what they count for.
type outBuf struct {
	b                                []byte
	frames, acks, delivers, replayed uint64
}

// frame kinds for the counters.
const (
	outOther = iota
	outAck
	outDeliver
	outReplay
)

// flushAt is the buffered size at which a connection's frames are written
// without waiting for the end of the operation (a long replay).
const flushAt = 256 << 10

// add queues one text frame with payload p for c.
func (o *outbox) add(c *Conn, p []byte, kind int) {
	if o.bufs == nil {
		o.bufs = make(map[*Conn]*outBuf)
	}
	ob := o.bufs[c]
	if ob == nil {
		if n := len(o.free); n > 0 {
			ob, o.free = o.free[n-1], o.free[:n-1]
		} else {
			ob = new(outBuf)
		}
		o.bufs[c] = ob
		o.order = append(o.order, c)
	}
	var hb [ws.MaxHeaderSize]byte
	n := headerBytes(hb[:], ws.Header{Fin: true, OpCode: ws.OpText, Length: int64(len(p))})
	ob.b = append(append(ob.b, hb[:n]...), p...)
	ob.frames++
	switch kind {
	case outAck:
		ob.acks++
	case outDeliver:
		ob.delivers++
	case outReplay:
		ob.replayed++
	}
	if len(ob.b) >= flushAt {
		o.write(c, ob)
	}
}

// flush writes every connection's frames and empties the outbox. It
// reports whether the last write to only, if set, succeeded.
func (o *outbox) flush(only *Conn) bool {
	ok := true
	for _, c := range o.order {
		ob := o.bufs[c]
		if !o.write(c, ob) && c == only {
			ok = false
		}
		delete(o.bufs, c)
		if cap(ob.b) <= 4*flushAt {
			o.free = append(o.free, ob)
		}
	}
	clear(o.order)
	o.order = o.order[:0]
	return ok
}

// write sends ob's frames to c and counts them; a failed write means c is
// going away (its OnClose cleans up).
func (o *outbox) write(c *Conn, ob *outBuf) bool {
	if len(ob.b) == 0 {
		return true
	}
	err := c.writeRaw(ob.b)
	if err == nil {
		st := &c.srv.stats
		st.messagesOut.Add(ob.frames)
		st.msgsAcked.Add(ob.acks)
		st.delivered.Add(ob.delivers)
		st.replayed.Add(ob.replayed)
	}
	ob.b = ob.b[:0]
	ob.frames, ob.acks, ob.delivers, ob.replayed = 0, 0, 0, 0
	return err == nil
}

// writeRaw writes whole frames already encoded, under the connection's
// write lock and deadline, like Write.
func (c *Conn) writeRaw(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closing.Load() {
		return ErrClosing
	}
	return c.write(b)
}
