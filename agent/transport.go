package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/stampede-dev/stampede/results"
)

// Transport carries protocol messages between a coordinator and one worker.
// Implementations: Stream (a worker process's stdin/stdout, or any pair of
// byte streams) and, for other hosts, a NATS subject pair. Send may be called
// from several goroutines; Recv from one.
type Transport interface {
	Send(Message) error
	Recv() (Message, error)
	Close() error
}

// maxMessage bounds one message on a stream (docs/agent.md): a loadgen
// streams its results in pieces far below it, so what one message costs
// either side stays small whatever the fleet's size. A longer line fails
// the transport.
const maxMessage = results.MaxMessageBytes

// Stream is a Transport over a pair of byte streams, one JSON message per
// line.
type Stream struct {
	maxRecv atomic.Int64 // the longest message received, in bytes
	mu      sync.Mutex
	w       io.Writer
	enc     *json.Encoder
	sc      *bufio.Scanner
	c       io.Closer
}

// NewStream returns a transport reading messages from r and writing to w.
// Close closes c (may be nil).
func NewStream(r io.Reader, w io.Writer, c io.Closer) *Stream {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	return &Stream{w: w, enc: json.NewEncoder(w), sc: sc, c: c}
}

// Send writes one message.
func (s *Stream) Send(m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(m); err != nil {
		return fmt.Errorf("agent: sending %s: %w", m.Kind, err)
	}
	return nil
}

// Recv reads the next message; io.EOF when the peer closed its side.
func (s *Stream) Recv() (Message, error) {
	var m Message
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return m, fmt.Errorf("agent: receiving: %w", err)
		}
		return m, io.EOF
	}
	if n := int64(len(s.sc.Bytes())); n > s.maxRecv.Load() {
		s.maxRecv.Store(n)
	}
	if err := json.Unmarshal(s.sc.Bytes(), &m); err != nil {
		return m, fmt.Errorf("agent: malformed message: %w", err)
	}
	return m, nil
}

// MaxReceived returns the length of the longest message received so far,
// in bytes: what the peer's largest message cost on the wire.
func (s *Stream) MaxReceived() int { return int(s.maxRecv.Load()) }

// Close closes the underlying closer, if any.
func (s *Stream) Close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}
