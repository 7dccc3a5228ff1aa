// Package wstest holds what tests of both ends of a WebSocket share: a
// bounded frame reader, a dialer that keeps a refusal's status and
// Retry-After, and readers of close frames. Only tests import it.
package wstest

import (
	"fmt"
	"io"

	"github.com/gobwas/ws"
)

// MaxFrame bounds the payload ReadFrame reads: the frames tests exchange
// are small.
const MaxFrame = 1 << 20

// ReadFrame reads one frame, its payload not unmasked, as ws.ReadFrame
// does, but checks the declared length against MaxFrame before reading
// the payload (ws.ReadFrame is deprecated for trusting it).
func ReadFrame(r io.Reader) (ws.Frame, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return ws.Frame{}, err
	}
	f := ws.Frame{Header: h}
	if h.Length > MaxFrame {
		return f, fmt.Errorf("a frame of %d bytes, more than a test reads (%d)", h.Length, MaxFrame)
	}
	if h.Length > 0 {
		f.Payload = make([]byte, h.Length)
		_, err = io.ReadFull(r, f.Payload)
	}
	return f, err
}
