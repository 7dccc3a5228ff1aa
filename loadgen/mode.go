package loadgen

import (
	"math"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
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
	// upAtUpgrade reports whether a client is up (its Up transition and
	// time to recover recorded) at its 101 answer. When false the mode
	// calls reactor.up once the connection caught up; a connection that
	// ends before then was never up and has no Down.
	upAtUpgrade() bool
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
// clients clients and records into rec.
func newHandler(cfg *Config, clients int, rec *recorder) handler {
	if cfg.Session.Protocol != "" {
		return newSessionMode(cfg, clients)
	}
	if cfg.Mode == spec.ModeStampede {
		return newStampedeMode(cfg, clients)
	}
	if cfg.Mode == spec.ModeEcho {
		return &echoMode{
			interval: int64(float64(time.Second) / cfg.MsgRate),
			size:     cfg.MsgSize,
			seed:     cfg.Seed,
			owed:     make([]int64, clients),
		}
	}
	return &sniffMode{rec: rec}
}

// noneMode holds the connection and answers pings (the reactor does that).
type noneMode struct{}

func (noneMode) connected(*reactor, int32, int64)               {}
func (noneMode) upAtUpgrade() bool                              { return true }
func (noneMode) timer(*reactor, int32, int64, int64)            {}
func (noneMode) data(*reactor, int32, ws.Header, []byte, int64) {}
func (noneMode) closed(*reactor, int32, int64)                  {}
func (noneMode) wantsPayload(ws.Header) bool                    { return false }
func (noneMode) finish(*reactor)                                {}

// echoMode sends a stamped text frame every interval and records the round
// trip when the server echoes it back, from the actual send and from the
// scheduled one. Each connection's first message comes at a seeded phase
// within the first interval, so a fleet that connected at once does not
// send in lockstep.
//
// A message's scheduled time is when its timer was due. A timer that fired
// more than an interval late sends one message, not the missed ones, and a
// client whose socket is backed up skips its message (counted Skipped):
// either way the next message sent is scheduled at the first slot missed,
// so the time the client could not send counts in its round trip.
type echoMode struct {
	interval int64 // ns between messages of one client
	size     int   // payload bytes
	seed     uint64
	owed     []int64 // by client: the first slot skipped since the last send, noTime if none
}

func (m *echoMode) connected(r *reactor, j int32, now int64) {
	c := &r.clients[j]
	u := backoff.U(m.seed, backoff.StreamMessage, uint64(r.id(j)), uint64(c.sockets))
	r.timers.schedule(j, now+int64(u*float64(m.interval)))
	m.owed[j] = noTime
}

func (m *echoMode) timer(r *reactor, j int32, at, now int64) {
	c := &r.clients[j]
	// A client whose socket does not take its output skips messages
	// rather than queueing them without bound.
	if r.backedUp(j) {
		r.rec.tally(func(m *results.Messages) { m.Skipped++ })
		if m.owed[j] == noTime {
			m.owed[j] = at
		}
	} else {
		due := at
		if m.owed[j] != noTime {
			due, m.owed[j] = m.owed[j], noTime
		}
		c.seq++
		p := r.pbuf[:m.size]
		putStamp(p, c.seq, now, due)
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
	_, sent, due, ok := readStamp(payload)
	if !ok {
		return
	}
	r.rec.delivered(now, time.Duration(max(now-sent, 0)), time.Duration(max(now-due, 0)))
}

func (m *echoMode) upAtUpgrade() bool { return true }

func (m *echoMode) closed(*reactor, int32, int64) {}

func (m *echoMode) wantsPayload(h ws.Header) bool { return h.Length == int64(m.size) }

func (m *echoMode) finish(*reactor) {}

// An echo stamp, stampSize bytes of text (so any echo server takes it) and
// fixed width (so it parses without allocating), in base-64 digits
// (0-9 a-z A-Z - _, most significant first):
//
//	's' seq:6 't' sent:11 lag:7 '.'...
//
// seq is the message's number, sent its actual send time in ns from the
// run's start (two's complement), and lag how long after its scheduled
// time it went out, in ns, saturated at 2^42-1 (73 minutes, beyond the
// histograms' hour). The scheduled time, sent-lag, travels with the
// message so the echo's round trip is measured from both instants without
// any per-message state (docs/results.md, "Coordinated omission").
const stampSize = 1 + seqDigits + 1 + sentDigits + lagDigits

const (
	seqDigits  = 6  // 36 bits
	sentDigits = 11 // 66 bits
	lagDigits  = 7  // 42 bits
	maxLag     = 1<<(6*lagDigits) - 1
)

const b64Digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"

// putStamp fills p (at least stampSize bytes) with a stamp of message seq
// sent at sent and due (scheduled) at due; a due after sent counts as on
// time.
func putStamp(p []byte, seq uint32, sent, due int64) {
	p[0] = 's'
	putDigits(p[1:1+seqDigits], uint64(seq))
	p[1+seqDigits] = 't'
	putDigits(p[2+seqDigits:2+seqDigits+sentDigits], uint64(sent))
	lag := uint64(0)
	if due < sent {
		lag = min(uint64(sent-due), maxLag)
	}
	putDigits(p[2+seqDigits+sentDigits:stampSize], lag)
	for i := stampSize; i < len(p); i++ {
		p[i] = '.'
	}
}

// putDigits writes u into d in base 64, most significant digit first.
func putDigits(d []byte, u uint64) {
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = b64Digits[u&63]
		u >>= 6
	}
}

// readStamp parses a stamp written by putStamp: the message's number, its
// actual send time and its scheduled send time.
func readStamp(p []byte) (seq uint32, sent, due int64, ok bool) {
	if len(p) < stampSize || p[0] != 's' || p[1+seqDigits] != 't' {
		return 0, 0, 0, false
	}
	sq, ok1 := digits(p[1 : 1+seqDigits])
	st, ok2 := digits(p[2+seqDigits : 2+seqDigits+sentDigits])
	lag, ok3 := digits(p[2+seqDigits+sentDigits : stampSize])
	if !ok1 || !ok2 || !ok3 || sq > math.MaxUint32 {
		return 0, 0, 0, false
	}
	return uint32(sq), int64(st), int64(st) - int64(lag), true
}

// digits parses base-64 digits written by putDigits (bits beyond 64 are
// dropped, as putDigits writes them zero).
func digits(d []byte) (uint64, bool) {
	var u uint64
	for _, b := range d {
		v, ok := unb64(b)
		if !ok {
			return 0, false
		}
		u = u<<6 | uint64(v)
	}
	return u, true
}

func unb64(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'z':
		return b - 'a' + 10, true
	case b >= 'A' && b <= 'Z':
		return b - 'A' + 36, true
	case b == '-':
		return 62, true
	case b == '_':
		return 63, true
	}
	return 0, false
}

const hexDigits = "0123456789abcdef"

func unhex(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	}
	return 0, false
}
