package loadgen

import (
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
)

// handler is a message mode: what a connected client sends, and what it
// does with the data frames it receives. It runs on the client's reactor
// goroutine and may use the reactor's timer for the client while it is
// connected (the timer is the client's alone in that state). The full
// message protocol (msg/ack/deliver/resume) plugs in here as a third mode,
// keeping its per-client state in slices indexed by j, sized to the shard.
type handler interface {
	// connected is called once the 101 answer arrived.
	connected(r *reactor, j int32, now int64)
	// timer is called when a deadline the handler scheduled at at is due.
	timer(r *reactor, j int32, at, now int64)
	// data is called for each whole text, binary or continuation frame.
	data(r *reactor, j int32, h ws.Header, payload []byte, now int64)
	// closed is called when the established connection ended, after its
	// socket was closed and before the retry is scheduled (a protocol that
	// tracks unacknowledged messages requeues them here).
	closed(r *reactor, j int32, now int64)
	// wantsPayload reports whether a data frame split across reads must be
	// gathered (true) or may be skipped unbuffered (false).
	wantsPayload(h ws.Header) bool
	// finish is called once at the end of the run, on the reactor's
	// goroutine, before the sockets are closed: the clients' states are
	// those of the end. A mode writes what it kept into the report here.
	finish(r *reactor)
}

// newHandler returns the mode of cfg for a reactor whose shard holds
// clients clients.
func newHandler(cfg *Config, clients int) handler {
	if cfg.Mode == ModeStampede {
		return newStampedeMode(cfg, clients)
	}
	if cfg.Mode == ModeEcho {
		return &echoMode{
			interval: int64(float64(time.Second) / cfg.MsgRate),
			size:     cfg.MsgSize,
			seed:     cfg.Seed,
		}
	}
	return noneMode{}
}

// noneMode holds the connection and answers pings (the reactor does that).
type noneMode struct{}

func (noneMode) connected(*reactor, int32, int64)               {}
func (noneMode) timer(*reactor, int32, int64, int64)            {}
func (noneMode) data(*reactor, int32, ws.Header, []byte, int64) {}
func (noneMode) closed(*reactor, int32, int64)                  {}
func (noneMode) wantsPayload(ws.Header) bool                    { return false }
func (noneMode) finish(*reactor)                                {}

// echoMode sends a stamped text frame every interval and records the round
// trip when the server echoes it back. Each connection's first message
// comes at a seeded phase within the first interval, so a fleet that
// connected at once does not send in lockstep.
type echoMode struct {
	interval int64 // ns between messages of one client
	size     int   // payload bytes
	seed     uint64
}

func (m *echoMode) connected(r *reactor, j int32, now int64) {
	c := &r.clients[j]
	u := backoff.U(m.seed, backoff.StreamMessage, uint64(r.id(j)), uint64(c.sockets))
	r.timers.schedule(j, now+int64(u*float64(m.interval)))
}

func (m *echoMode) timer(r *reactor, j int32, at, now int64) {
	c := &r.clients[j]
	// A client whose socket does not take its output skips messages
	// rather than queueing them without bound.
	if !r.backedUp(j) {
		c.seq++
		p := r.pbuf[:m.size]
		putStamp(p, c.seq, now)
		if !r.send(j, r.frameBytes(ws.OpText, p, r.f.up.maskKey(r.id(j), c.sockets, c.seq))) {
			return
		}
		r.rec.sent(now)
	}
	next := at + m.interval
	if next <= now {
		next = now + m.interval
	}
	r.timers.schedule(j, next)
}

func (m *echoMode) data(r *reactor, j int32, h ws.Header, payload []byte, now int64) {
	if h.OpCode != ws.OpText && h.OpCode != ws.OpBinary {
		return
	}
	_, sent, ok := readStamp(payload)
	if !ok {
		return
	}
	r.rec.delivered(now, time.Duration(max(now-sent, 0)))
}

func (m *echoMode) closed(*reactor, int32, int64) {}

func (m *echoMode) wantsPayload(h ws.Header) bool { return h.Length == int64(m.size) }

func (m *echoMode) finish(*reactor) {}

// An echo stamp: 's', the message's sequence number in 8 hex digits, 't',
// its send time in ns from the run's start in 16 hex digits, then '.'
// padding. Text, so any echo server takes it; fixed width, so it parses
// without allocating.
const stampSize = 1 + 8 + 1 + 16

const hexDigits = "0123456789abcdef"

// putStamp fills p (at least stampSize bytes) with a stamp.
func putStamp(p []byte, seq uint32, sent int64) {
	p[0] = 's'
	for i := 0; i < 8; i++ {
		p[8-i] = hexDigits[(seq>>(4*i))&0xf]
	}
	p[9] = 't'
	u := uint64(sent)
	for i := 0; i < 16; i++ {
		p[25-i] = hexDigits[(u>>(4*i))&0xf]
	}
	for i := stampSize; i < len(p); i++ {
		p[i] = '.'
	}
}

// readStamp parses a stamp written by putStamp.
func readStamp(p []byte) (seq uint32, sent int64, ok bool) {
	if len(p) < stampSize || p[0] != 's' || p[9] != 't' {
		return 0, 0, false
	}
	var u uint64
	for i := 1; i < stampSize; i++ {
		if i == 9 {
			seq, u = uint32(u), 0
			continue
		}
		d, ok := unhex(p[i])
		if !ok {
			return 0, 0, false
		}
		u = u<<4 | uint64(d)
	}
	return seq, int64(u), true
}

func unhex(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	}
	return 0, false
}
