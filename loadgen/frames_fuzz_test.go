package loadgen

import (
	"bytes"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/spec"
	"golang.org/x/sys/unix"
)

// frameOutcome is what a connected client made of the bytes a server
// sent: still connected or dropped, what it wrote back (pongs, a close),
// and what it holds of an incomplete frame.
type frameOutcome struct {
	state   state
	open    bool
	wrote   []byte
	pending []byte
	skip    int64
}

// feedFrames hands pieces, in turn, to the frame reader of a connected
// client whose socket is one end of a socket pair, and returns the outcome.
func feedFrames(t *testing.T, mode string, pieces ...[]byte) frameOutcome {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	f := &Fleet{cfg: Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Mode: mode, MsgSize: 64}}.withDefaults()}
	u, _ := url.Parse(f.cfg.URL)
	f.up = newUpgrade(u, nil, nil, 1)
	r := newReactor(f, 0, 1)
	r.rbuf, r.wbuf, r.pbuf = make([]byte, readBufSize), make([]byte, 0, writeBufSize), make([]byte, spec.MaxMsgSize)
	r.epoch = time.Now()
	c := &r.clients[0]
	c.state, c.fd, c.up = stConnected, int32(fds[0]), true
	defer func() {
		if c.fd >= 0 { // not closed by a drop
			unix.Close(int(c.fd))
		}
	}()
	const now = int64(time.Second)
	for _, p := range pieces {
		if c.state != stConnected {
			break
		}
		r.frames(0, p, now)
	}
	out := frameOutcome{state: c.state, open: c.fd >= 0}
	if c.ext != nil {
		out.pending, out.skip = append([]byte(nil), c.ext.in...), c.ext.skip
	}
	if err := unix.SetNonblock(fds[1], true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(fds[1], buf)
		if n > 0 {
			out.wrote = append(out.wrote, buf[:n]...)
		}
		if n <= 0 || err != nil {
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				t.Fatal(err)
			}
			break
		}
	}
	return out
}

// FuzzFrames: no bytes from a server make the frame reader panic, and
// where a read splits them does not matter: the client ends in the same
// state, having written the same bytes back, holding the same partial
// frame.
func FuzzFrames(f *testing.F) {
	text := compile(ws.NewTextFrame(bytes.Repeat([]byte{'x'}, 64)))
	ping := compile(ws.NewPingFrame([]byte("hi")))
	closeF := compile(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "bye")))
	big := compile(ws.NewBinaryFrame(make([]byte, 70000)))
	for _, s := range [][]byte{
		append(append(append([]byte{}, ping...), text...), closeF...),
		big[:100],                // a long frame, most of it still to come
		{0x89, 0x7e, 0x00, 0x80}, // a ping longer than 125 bytes
		{0x09, 0x00},             // a ping without FIN
		{0x83, 0x00},             // a reserved opcode
		{0xc1, 0x00},             // RSV1 without an extension
		{0x81, 0x80, 1, 2, 3, 4}, // a masked server frame
		{0x82, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // a 2^64-1 length
		{0x88, 0x01, 0x03}, // a close with half a code
		{0x88, 0x00},       // a close without a code
		{0x81},             // half a header
	} {
		f.Add(s, uint16(1), false)
		f.Add(s, uint16(len(s)/2), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, echo bool) {
		mode := spec.ModeNone
		if echo {
			mode = spec.ModeEcho
		}
		k := int(cut) % (len(data) + 1)
		whole := feedFrames(t, mode, data)
		split := feedFrames(t, mode, data[:k], data[k:])
		if whole.state != split.state || whole.open != split.open || !bytes.Equal(whole.wrote, split.wrote) ||
			!bytes.Equal(whole.pending, split.pending) || whole.skip != split.skip {
			t.Fatalf("%x split at %d: whole %+v, split %+v", data, k, whole, split)
		}
		if whole.open != (whole.state == stConnected) {
			t.Fatalf("%x: state %v with the socket open %v", data, whole.state, whole.open)
		}
	})
}
