package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrBye is a session the peer ended in order (the run is over).
var ErrBye = errors.New("hub: the peer ended the session")

// session is one authenticated conversation between an agent and its
// coordinator: signed, sequenced messages in each direction, heartbeats,
// and channels (one Channel per role placed on the agent).
type session struct {
	nc      *nats.Conn
	key     []byte
	out     string // the subject this side publishes on
	sub     *nats.Subscription
	timeout time.Duration
	beat    time.Duration

	sendMu sync.Mutex
	seqOut uint64
	seqIn  uint64 // the reader's

	heard atomic.Int64 // unix nanoseconds of the last valid message
	// offline, if set, says since when the connection to the NATS server
	// is down (zero: it is up).
	offline func() time.Time

	mu    sync.Mutex
	chans map[int]*channel
	// onChannel, if set (the agent side), is called with a channel the
	// peer opened by sending on it.
	onChannel func(*channel)
	// onMsg handles the session's own kinds (clock, offset, ...).
	onMsg func(p parsed)
	// shift (a time.Duration) is the agent side's clock offset, which
	// its channels' readers (agent.OverLink) add to every time of an
	// outgoing message and take from every incoming one. Atomic: the
	// join sets it once the offset is known, while run already reads
	// messages.
	shift atomic.Int64

	dead    chan struct{}
	deadErr error
	once    sync.Once
}

func newSession(nc *nats.Conn, key []byte, out string, sub *nats.Subscription, seqOut, seqIn uint64) *session {
	s := &session{nc: nc, key: key, out: out, sub: sub, timeout: LossTimeout, beat: BeatInterval,
		seqOut: seqOut, seqIn: seqIn, chans: map[int]*channel{}, dead: make(chan struct{})}
	s.heard.Store(time.Now().UnixNano())
	return s
}

// run reads and dispatches the peer's messages and sends beats until the
// session ends.
func (s *session) run() {
	go s.beats()
	for {
		m, err := s.sub.NextMsg(s.beat)
		select {
		case <-s.dead:
			return
		default:
		}
		if errors.Is(err, nats.ErrTimeout) {
			if err := s.silence(); err != nil {
				s.end(err)
				return
			}
			continue
		}
		if err != nil {
			s.end(fmt.Errorf("hub: receiving: %w", err))
			return
		}
		p, err := verify(s.key, m)
		if err != nil {
			continue // not the peer's: ignored (a stranger, or a stale session)
		}
		if p.seq <= s.seqIn {
			continue // a replay
		}
		if p.seq != s.seqIn+1 {
			s.end(fmt.Errorf("hub: %d message(s) lost on the way (a NATS slow consumer?)", p.seq-s.seqIn-1))
			return
		}
		s.seqIn = p.seq
		s.heard.Store(time.Now().UnixNano())
		switch p.kind {
		case kBeat:
		case kBye:
			s.end(ErrBye)
			return
		case kMsg, kEOF:
			s.deliver(p)
		default:
			if s.onMsg != nil {
				s.onMsg(p)
			}
		}
	}
}

// beats sends a beat every s.beat until the session ends.
func (s *session) beats() {
	t := time.NewTicker(s.beat)
	defer t.Stop()
	for {
		select {
		case <-s.dead:
			return
		case <-t.C:
			_ = s.send(kBeat, 0, nil)
		}
	}
}

// silence says why the session is over when nothing came for a beat: the
// NATS server unreachable for OfflineTimeout, or the peer silent for
// longer than the session's timeout; nil while neither.
func (s *session) silence() error {
	if s.offline != nil {
		if since := s.offline(); !since.IsZero() && time.Since(since) > OfflineTimeout {
			return fmt.Errorf("the NATS server is unreachable for %.1fs", time.Since(since).Seconds())
		}
	}
	if silent := time.Since(time.Unix(0, s.heard.Load())); silent > s.timeout {
		return fmt.Errorf("no message for %.1fs", silent.Seconds())
	}
	return nil
}

// deliver hands a channel's message, or its end, to the channel.
func (s *session) deliver(p parsed) {
	c := s.channel(p.ch, true)
	if c == nil {
		return
	}
	if p.kind == kEOF {
		c.push(nil, io.EOF)
		return
	}
	c.maxRecv(len(p.body))
	c.push(p.body, nil)
}

// send publishes one message of the session.
func (s *session) send(kind string, ch int, body []byte) error {
	select {
	case <-s.dead:
		return fmt.Errorf("hub: session over: %w", s.err())
	default:
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.seqOut++
	return s.nc.PublishMsg(newMsg(s.key, s.out, s.seqOut, kind, ch, body))
}

// sendJSON sends v as the body of a session message.
func (s *session) sendJSON(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.send(kind, 0, b)
}

// end ends the session with err: every channel's Recv then fails.
func (s *session) end(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.deadErr = err
		chans := s.chans
		s.mu.Unlock()
		close(s.dead)
		for _, c := range chans {
			c.push(nil, err)
		}
		_ = s.sub.Unsubscribe()
	})
}

// err is why the session ended (nil while it lasts).
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadErr
}

// bye tells the peer the session is over, in order, and ends it.
func (s *session) bye() {
	_ = s.send(kBye, 0, nil)
	_ = s.nc.FlushTimeout(2 * time.Second)
	s.end(ErrBye)
}

// channel returns channel n, making it when make is set.
func (s *session) channel(n int, make bool) *channel {
	s.mu.Lock()
	c := s.chans[n]
	if c != nil || !make {
		s.mu.Unlock()
		return c
	}
	if s.deadErr != nil {
		s.mu.Unlock()
		return nil
	}
	c = newChannel(s, n)
	s.chans[n] = c
	on := s.onChannel
	s.mu.Unlock()
	if on != nil {
		on(c)
	}
	return c
}

// Channel is one role's conversation over a session: the JSON messages of
// the agent protocol, which the hub carries without reading them (package
// agent reads them: agent.OverLink). It is an alias of an interface
// literal, as agent.Link is, so functions over either are one type.
type Channel = interface {
	// Send sends one message.
	Send(msg []byte) error
	// Recv returns the next message; io.EOF when the peer closed the
	// channel, another error when the session ended.
	Recv() ([]byte, error)
	// Close tells the peer this side of the channel is over (as closing
	// a child's stdin does).
	Close() error
	// Offset is how far this side's clock is behind its coordinator's, as
	// the join estimated it: 0 on the coordinator's side, and on an
	// agent's until the offset is known.
	Offset() time.Duration
	// MaxReceived is the longest message received, in bytes.
	MaxReceived() int
}

// channel is one Channel of a session: the messages of one role.
type channel struct {
	s   *session
	n   int
	max atomic.Int64

	mu     sync.Mutex
	q      [][]byte
	qerr   error
	notify chan struct{}
	closed atomic.Bool
	served atomic.Bool // the agent side: a role serves it
}

func newChannel(s *session, n int) *channel {
	return &channel{s: s, n: n, notify: make(chan struct{}, 1)}
}

// push queues a message, or the error that ends the channel. The queue is
// unbounded: the session's reader never waits for a role.
func (c *channel) push(m []byte, err error) {
	c.mu.Lock()
	if c.qerr == nil {
		if err != nil {
			c.qerr = err
		} else {
			c.q = append(c.q, m)
		}
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *channel) maxRecv(n int) {
	if int64(n) > c.max.Load() {
		c.max.Store(int64(n))
	}
}

// MaxReceived is the longest message received, in bytes.
func (c *channel) MaxReceived() int { return int(c.max.Load()) }

// Offset is the session's clock offset (0 on the coordinator's side).
func (c *channel) Offset() time.Duration { return time.Duration(c.s.shift.Load()) }

// Send sends one message.
func (c *channel) Send(m []byte) error {
	if c.closed.Load() {
		return io.ErrClosedPipe
	}
	return c.s.send(kMsg, c.n, m)
}

// Recv returns the next message; io.EOF when the peer closed the channel,
// another error when the session ended.
func (c *channel) Recv() ([]byte, error) {
	for {
		c.mu.Lock()
		if len(c.q) > 0 {
			m := c.q[0]
			c.q[0] = nil
			c.q = c.q[1:]
			c.mu.Unlock()
			return m, nil
		}
		err := c.qerr
		c.mu.Unlock()
		if err != nil {
			if errors.Is(err, ErrBye) {
				return nil, io.EOF
			}
			return nil, err
		}
		<-c.notify
	}
}

// Close tells the peer this side of the channel is over (as closing a
// child's stdin does).
func (c *channel) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.s.send(kEOF, c.n, nil)
}
