package loadgen

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/spec"
)

// benchReactor is a reactor with one connected client and no sockets, for
// the in-memory hot paths.
func benchReactor(b *testing.B, mode string) *reactor {
	f := &Fleet{cfg: Config{Client: spec.Client{URL: "ws://127.0.0.1:1/", Clients: 1, Mode: mode, MsgSize: 64}}.withDefaults()}
	u, _ := url.Parse(f.cfg.URL)
	f.up = newUpgrade(u, nil, nil, 1)
	r := newReactor(f, 0, 1)
	r.rbuf, r.wbuf, r.pbuf = make([]byte, readBufSize), make([]byte, 0, writeBufSize), make([]byte, spec.MaxMsgSize)
	r.epoch = time.Now()
	r.clients[0].state = stConnected
	r.clients[0].fd = 1 << 20 // never written to: data frames only
	return r
}

// BenchmarkFrames: 64 echo frames of 64 bytes handled from one read.
func BenchmarkFrames(b *testing.B) {
	r := benchReactor(b, spec.ModeEcho)
	var buf bytes.Buffer
	p := make([]byte, 64)
	putStamp(p, 1, 0, 0)
	for i := 0; i < 64; i++ {
		_ = ws.WriteFrame(&buf, ws.NewTextFrame(p))
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r.frames(0, data, r.now())
	}
	if r.rec.rep.Messages.Delivered == 0 {
		b.Fatal("no echo recorded")
	}
}

// BenchmarkRequest: writing one upgrade request and checking its answer.
func BenchmarkRequest(b *testing.B) {
	r := benchReactor(b, spec.ModeNone)
	var key [24]byte
	r.f.up.key(&key, 0, 1)
	answer := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acceptOf(string(key[:])) + "\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		r.wbuf = r.f.up.appendRequest(r.wbuf[:0], 0, 1)
		if a, err := r.f.up.parseAnswer(answer, 0, 1); err != nil || a.status != 101 {
			b.Fatal(a, err)
		}
	}
}
