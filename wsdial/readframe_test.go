package wsdial

import (
	"fmt"
	"io"

	"github.com/gobwas/ws"
)

// maxTestFrame bounds the payload a test reads: the frames tests exchange
// are small.
const maxTestFrame = 1 << 20

// readFrame reads one frame, its payload not unmasked, as ws.ReadFrame
// does, but checks the declared length against maxTestFrame before
// reading the payload (ws.ReadFrame is deprecated for trusting it).
func readFrame(r io.Reader) (ws.Frame, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return ws.Frame{}, err
	}
	f := ws.Frame{Header: h}
	if h.Length > maxTestFrame {
		return f, fmt.Errorf("a frame of %d bytes, more than a test reads (%d)", h.Length, maxTestFrame)
	}
	if h.Length > 0 {
		f.Payload = make([]byte, h.Length)
		_, err = io.ReadFull(r, f.Payload)
	}
	return f, err
}
