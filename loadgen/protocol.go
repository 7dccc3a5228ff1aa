package loadgen

import (
	"math"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/track"
)

// maxQueue bounds a client's retry queue: at the default rate it is more
// than an hour of messages. A client whose queue is full skips its next
// messages (counted as Skipped) rather than grow without bound.
const maxQueue = 4096

// stampedeMode speaks the message protocol (docs/protocol.md). A client's
// life on one connection:
//
//	101 ─> join {room}            (first connect, or every reconnect with NoResume)
//	   └─> resume {room, last}    (a reconnect)
//	joined / resumed ─> resend the retry queue in order, then msg every 1/MsgRate
//	ack {id, seq}     ─> the message leaves the retry queue (RTT: last send to ACK;
//	                     scheduled RTT: the time it was first due to ACK)
//	deliver           ─> recorded for the tracker (tracker.go)
//	close             ─> the retry queue waits for the next connection
//	                     (NoRetryQueue: it is dropped, counted unacked_dropped)
//
// Nothing is sent in the last QuietPeriod of the run, so that deliveries in
// flight land before the tracker counts loss; a client still behind its
// room at the end counts as unsynced (track.Record.Count).
type stampedeMode struct {
	cfg      *Config
	interval int64    // ns between messages of one client
	sendEnd  int64    // offset after which nothing is sent
	names    names    // room names and message IDs of this run
	m        []member // the shard's clients, by index
	rooms    roomLogs // what was seen per room
	fr       protocol.Frame
	out      []byte // a frame being built
	scratch  []byte // IDs and room names being built
	body     []byte
	ready    bool // sendEnd and names are set (at the first connect)
}

// member is one client's protocol state.
type member struct {
	queue   []pending // un-ACKed messages in send order; nil when empty
	recv    bitset    // received seqs, by index in the room's log
	join    uint64    // join point: the through of the first joined
	last    uint64    // highest seq seen in the room
	through uint64    // what the current connection's joined/resumed said
	waitAt  int64     // when the pending join or resume was sent
	owed    int64     // the first slot skipped since the last message created, noTime if none
	next    uint32    // number of the last message created (from 1)
	sameSeq uint32    // deliveries of a seq already received
	st      memberState
	joined  bool // joined its room at least once
}

// pending is an un-ACKed message of the retry queue.
type pending struct {
	sent   int64  // when it was last sent
	due    int64  // when it was first scheduled to be sent: a resend keeps it
	n      uint32 // the message's number
	resent bool
}

type memberState uint8

const (
	away     memberState = iota // not connected
	joining                     // join sent, waiting for joined
	resuming                    // resume sent, waiting for resumed
	synced                      // caught up: sending and receiving live
)

func newStampedeMode(cfg *Config, clients int) *stampedeMode {
	return &stampedeMode{
		cfg:      cfg,
		interval: int64(float64(time.Second) / cfg.MsgRate),
		m:        make([]member, clients),
		rooms:    roomLogs{},
		body:     make([]byte, cfg.MsgSize),
	}
}

// start fixes what depends on the run's start and end, known once Run began.
func (h *stampedeMode) start(r *reactor) {
	h.ready = true
	h.names = newNames(r.f.cfg.Start, r.f.cfg.Rooms)
	h.sendEnd = math.MaxInt64
	if !r.f.end.IsZero() {
		h.sendEnd = int64(r.f.end.Sub(r.f.cfg.Start) - h.cfg.QuietPeriod)
	}
}

func (h *stampedeMode) connected(r *reactor, j int32, now int64) {
	if !h.ready {
		h.start(r)
	}
	m := &h.m[j]
	room := h.room(r, j)
	f := protocol.Frame{Type: protocol.TypeJoin, Room: room}
	m.st = joining
	if m.joined && !h.cfg.NoResume {
		f = protocol.Frame{Type: protocol.TypeResume, Room: room, LastSeq: m.last}
		m.st = resuming
	}
	m.waitAt = now
	h.send(r, j, &f)
}

// upAtUpgrade is false: a client is up once it caught up (docs/metrics.md
// "Client TTR": connected again and resumed), which sync reports.
func (h *stampedeMode) upAtUpgrade() bool { return false }

// sync runs once the connection caught up (joined or resumed): the client
// is up, the retry queue is resent in order, then messages go out at the
// client's rate from a seeded phase, so a fleet that reconnected at once
// does not send in lockstep.
func (h *stampedeMode) sync(r *reactor, j int32, now int64) {
	m := &h.m[j]
	m.st = synced
	r.up(j, now)
	if now >= h.sendEnd {
		return
	}
	sock := r.clients[j].sockets
	for i := range m.queue {
		p := &m.queue[i]
		p.sent, p.resent = now, true
		r.rec.retried()
		if !h.sendMsg(r, j, p.n, p.due) || r.clients[j].sockets != sock {
			return // the connection ended; m.queue may have changed
		}
	}
	u := backoff.U(h.cfg.Seed, backoff.StreamMessage, uint64(r.id(j)), uint64(sock))
	r.timers.schedule(j, now+int64(u*float64(h.interval)))
	m.owed = noTime
}

func (h *stampedeMode) timer(r *reactor, j int32, at, now int64) {
	if now >= h.sendEnd {
		return
	}
	m := &h.m[j]
	// A message is scheduled at its timer's deadline, or at the first slot
	// skipped before it (as in the echo mode), so a late timer or a
	// backed-up socket counts in its scheduled round trip.
	if r.backedUp(j) || len(m.queue) >= maxQueue {
		r.rec.tally(func(m *results.Messages) { m.Skipped++ })
		if m.owed == noTime {
			m.owed = at
		}
	} else {
		due := at
		if m.owed != noTime {
			due, m.owed = m.owed, noTime
		}
		m.next++
		m.queue = append(m.queue, pending{sent: now, due: due, n: m.next})
		r.rec.sent(now)
		if !h.sendMsg(r, j, m.next, due) {
			return
		}
	}
	next := at + h.interval
	if next <= now {
		next = now + h.interval
	}
	r.timers.schedule(j, next)
}

// sendMsg sends message n of client j, scheduled at due; false when the
// connection ended.
func (h *stampedeMode) sendMsg(r *reactor, j int32, n uint32, due int64) bool {
	id := r.id(j)
	putStamp(h.body, n, r.now(), due)
	h.scratch = h.names.appendID(h.scratch[:0], track.Key(id, n))
	idLen := len(h.scratch)
	h.scratch = h.names.appendRoom(h.scratch, h.names.roomOf(id))
	f := protocol.Frame{Type: protocol.TypeMsg, ID: h.scratch[:idLen], Room: h.scratch[idLen:], Body: h.body}
	return h.send(r, j, &f)
}

// send encodes f and writes it; false when the connection ended.
func (h *stampedeMode) send(r *reactor, j int32, f *protocol.Frame) bool {
	c := &r.clients[j]
	c.seq++
	h.out = protocol.Append(h.out[:0], f)
	return r.send(j, r.frameBytes(ws.OpText, h.out, r.f.up.maskKey(r.id(j), c.sockets, c.seq)))
}

// room returns client j's room name (valid until the next call).
func (h *stampedeMode) room(r *reactor, j int32) []byte {
	h.scratch = h.names.appendRoom(h.scratch[:0], h.names.roomOf(r.id(j)))
	return h.scratch
}

func (h *stampedeMode) data(r *reactor, j int32, hd ws.Header, payload []byte, now int64) {
	if hd.OpCode != ws.OpText {
		return
	}
	f := &h.fr
	if err := protocol.Decode(payload, f); err != nil {
		// Skipped, not fatal: a resume would replay the same frame on
		// every reconnect. What it should have delivered counts as lost.
		r.rec.tally(func(m *results.Messages) { m.BadFrames++ })
		return
	}
	m := &h.m[j]
	id := r.id(j)
	switch f.Type {
	case protocol.TypeAck:
		key, ok := h.names.key(f.ID)
		if !ok || track.Sender(key) != id {
			return // not one of this client's messages
		}
		m.last = max(m.last, f.Seq)
		h.rooms.of(h.names.roomOf(id)).add(f.Seq, key, true)
		h.acked(r, j, uint32(key), f.Seq, now)
	case protocol.TypeDeliver:
		if !h.isRoom(r, j, f.Room) {
			return
		}
		key, ok := h.names.key(f.ID)
		if !ok {
			key = track.KeyUnknown
		}
		m.last = max(m.last, f.Seq)
		i := h.rooms.of(h.names.roomOf(id)).add(f.Seq, key, false)
		if m.recv.has(i) {
			m.sameSeq++
		} else {
			m.recv.set(i)
		}
		r.rec.delivered(now, 0, 0)
	case protocol.TypeJoined:
		if m.st != joining || !h.isRoom(r, j, f.Room) {
			return
		}
		if !m.joined {
			m.joined, m.join = true, f.Through
		}
		m.last, m.through = max(m.last, f.Through), f.Through
		h.sync(r, j, now)
	case protocol.TypeResumed:
		if m.st != resuming || !h.isRoom(r, j, f.Room) {
			return
		}
		m.last, m.through = max(m.last, f.Through), f.Through
		r.rec.resumed(now, time.Duration(now-m.waitAt))
		h.sync(r, j, now)
	case protocol.TypeResumeGap:
		if h.isRoom(r, j, f.Room) {
			r.rec.tally(func(m *results.Messages) { m.ResumeGap++ })
		}
	}
}

// acked takes message n off client j's retry queue when its ACK with seq
// arrives. A resent message ACKed with a seq at or below what the
// connection's joined or resumed reported was stored before the resend:
// the server's dedupe suppressed the duplicate.
func (h *stampedeMode) acked(r *reactor, j int32, n uint32, seq uint64, now int64) {
	m := &h.m[j]
	i := 0
	for i < len(m.queue) && m.queue[i].n != n {
		i++
	}
	if i == len(m.queue) {
		return // a repeated ACK
	}
	p := m.queue[i]
	if i == 0 {
		m.queue = m.queue[1:]
	} else {
		m.queue = append(m.queue[:i], m.queue[i+1:]...)
	}
	if len(m.queue) == 0 {
		m.queue = nil
	}
	if p.resent && seq <= m.through {
		r.rec.tally(func(m *results.Messages) { m.DupSuppressed++ })
	}
	r.rec.acked(now, time.Duration(max(now-p.sent, 0)), time.Duration(max(now-p.due, 0)))
}

// isRoom reports whether name is client j's room.
func (h *stampedeMode) isRoom(r *reactor, j int32, name []byte) bool {
	return string(name) == string(h.room(r, j))
}

func (h *stampedeMode) closed(r *reactor, j int32, _ int64) {
	m := &h.m[j]
	m.st = away
	if h.cfg.NoRetryQueue && len(m.queue) > 0 {
		n := uint64(len(m.queue))
		r.rec.tally(func(m *results.Messages) { m.UnackedDropped += n })
		m.queue = nil
	}
}

func (h *stampedeMode) wantsPayload(hd ws.Header) bool {
	return hd.OpCode == ws.OpText && hd.Length <= protocol.MaxFrameSize
}
