package loadgen

import (
	"fmt"
	"io"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/spec"
)

// frames handles bytes of an established connection: whole frames straight
// from the buffer they arrived in; a frame split across reads is completed
// in the client's extras, or skipped without buffering when the mode does not
// need its payload.
func (r *reactor) frames(j int32, data []byte, now int64) {
	c := &r.clients[j]
	if r.ka != nil {
		r.ka.heard(j, now)
	}
	buf := data
	if e := c.ext; e != nil {
		if e.skip > 0 {
			k := min(e.skip, int64(len(buf)))
			e.skip -= k
			buf = buf[k:]
		}
		if len(e.in) > 0 {
			e.in = append(e.in, buf...)
			buf = e.in
		}
	}
	sock := c.sockets
	for len(buf) > 0 {
		r.rd.Reset(buf)
		h, err := ws.ReadHeaderBuffer(&r.rd, r.hdr[:])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break // a partial header
		}
		if err == nil {
			err = checkHeader(h)
		}
		if err != nil {
			r.drop(j, failure{class: connerr.Protocol, err: err}, now)
			return
		}
		hl := len(buf) - r.rd.Len()
		if avail := int64(len(buf) - hl); avail < h.Length {
			if h.OpCode.IsControl() || (h.Length <= spec.MaxMsgSize && r.mode.wantsPayload(h)) {
				break // keep the partial frame
			}
			r.extOf(j).skip = h.Length - avail
			buf = nil
			break
		}
		end := hl + int(h.Length)
		r.frame(j, h, buf[hl:end], now)
		if c.sockets != sock || c.state != stConnected {
			return
		}
		buf = buf[end:]
	}
	if len(buf) > 0 {
		e := r.extOf(j)
		e.in = append(e.in[:0], buf...)
		return
	}
	if c.ext != nil {
		c.ext.in = c.ext.in[:0]
		r.release(j)
	}
}

// checkHeader rejects frames a server may not send when no extension was
// negotiated. Continuation frames are passed to the mode as they come.
func checkHeader(h ws.Header) error {
	switch {
	case h.Masked:
		return ws.ErrProtocolMaskUnexpected
	case h.Rsv != 0:
		return ws.ErrProtocolNonZeroRsv
	case h.OpCode.IsReserved():
		return ws.ErrProtocolOpCodeReserved
	case h.OpCode.IsControl() && h.Length > 125:
		return ws.ErrProtocolControlPayloadOverflow
	case h.OpCode.IsControl() && !h.Fin:
		return ws.ErrProtocolControlNotFinal
	}
	return nil
}

// frame handles one whole frame: pings are answered, a close frame ends the
// connection with the class of its code, data goes to the message mode.
func (r *reactor) frame(j int32, h ws.Header, payload []byte, now int64) {
	switch h.OpCode {
	case ws.OpPing:
		r.control(j, ws.OpPong, payload)
	case ws.OpPong:
	case ws.OpClose:
		code, reason := ws.ParseCloseFrameData(payload)
		// Answer with the same code, as RFC 6455 5.5.1 asks; best effort,
		// the socket is closed right after.
		c := &r.clients[j]
		mask := r.f.up.maskKey(r.id(j), c.sockets, 1<<31|c.seq)
		var body []byte
		if len(payload) >= 2 {
			body = payload[:2]
		}
		r.sendLast(j, r.frameBytes(ws.OpClose, body, mask))
		f := failure{class: r.sessionClass(j, frameCode(code), reason, now, connerr.ClassifyClose(code)), err: closedError{code, reason}, conn: backoff.Conn{Close: int(code)}}
		// A restart or an overloaded server may say when to come back:
		// "retry after 3.25s", honoured as a Retry-After.
		f.hint = connerr.CloseHint(f.class, reason, r.f.cfg.RetryAfterCap)
		r.drop(j, f, now)
	default:
		r.mode.data(r, j, h, payload, now)
	}
}

// closedError is a close frame's code and reason as a client's last error.
type closedError struct {
	code   ws.StatusCode
	reason string
}

func (e closedError) Error() string {
	if e.code == 0 {
		return "close frame without a code"
	}
	if e.reason == "" {
		return fmt.Sprintf("close frame %d", e.code)
	}
	return fmt.Sprintf("close frame %d %q", e.code, e.reason)
}

// control sends a control frame unless the client's output is backed up.
func (r *reactor) control(j int32, op ws.OpCode, payload []byte) bool {
	c := &r.clients[j]
	if c.ext != nil && len(c.ext.out) > maxOut {
		return true
	}
	mask := r.f.up.maskKey(r.id(j), c.sockets, 1<<31|c.seq)
	return r.send(j, r.frameBytes(op, payload, mask))
}

// frameBytes encodes a masked client frame into the reactor's write buffer.
// Client frames must be masked, so gobwas's compiled server frames
// (ws.CompiledPong) cannot be sent as they are.
func (r *reactor) frameBytes(op ws.OpCode, payload []byte, mask [4]byte) []byte {
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Mask: mask, Length: int64(len(payload))}
	r.aw.b = r.wbuf[:0]
	_ = ws.WriteHeaderBuffer(&r.aw, h, r.hdr[:]) // cannot fail: the length is in range
	start := len(r.aw.b)
	r.aw.b = append(r.aw.b, payload...)
	ws.Cipher(r.aw.b[start:], mask, 0)
	r.wbuf = r.aw.b[:0] // keep a grown buffer for the next frame
	return r.aw.b
}
