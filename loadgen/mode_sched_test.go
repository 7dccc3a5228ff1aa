package loadgen

import (
	"bufio"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/spec"
	"golang.org/x/sys/unix"
)

// pairedReactor is a reactor of one connected client whose socket is one
// end of a socket pair; the other end, for reading what it sent, is
// returned. The test drives the mode's callbacks with chosen times.
func pairedReactor(t *testing.T, cfg Config) (*reactor, *bufio.Reader) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	t.Cleanup(func() { unix.Close(fds[0]); peer.Close() })
	cfg.URL, cfg.Clients = "ws://127.0.0.1:1/", 1
	f := &Fleet{cfg: cfg.withDefaults()}
	u, _ := url.Parse(f.cfg.URL)
	f.up = newUpgrade(u, nil, nil, 1)
	r := newReactor(f, 0, 1)
	r.rbuf, r.wbuf, r.pbuf = make([]byte, readBufSize), make([]byte, 0, writeBufSize), make([]byte, spec.MaxMsgSize)
	r.epoch = time.Now()
	r.clients[0].state = stConnected
	r.clients[0].fd = int32(fds[0])
	return r, bufio.NewReader(peer)
}

// echoBack reads the client's next frame from the peer and returns it as
// the server's unmasked echo.
func echoBack(t *testing.T, br *bufio.Reader) []byte {
	t.Helper()
	f := readClientFrame(t, br)
	return compile(ws.NewTextFrame(f.Payload))
}

// TestEchoScheduledRTT: a timer the reactor fired late, and a slot skipped
// because the socket was backed up, make the round trip from the scheduled
// send longer than the one from the actual send by exactly the delay.
func TestEchoScheduledRTT(t *testing.T) {
	const ms = int64(time.Millisecond)
	r, br := pairedReactor(t, Config{Client: spec.Client{Mode: spec.ModeEcho, MsgRate: 10, MsgSize: 64}}) // a slot every 100 ms
	m := r.mode.(*echoMode)
	m.connected(r, 0, 0)
	for _, step := range []struct {
		name    string
		at, now int64 // the timer's deadline and when it fired
		backed  bool  // the socket is backed up at the slot
		echoAt  int64 // when the echo arrives (0: nothing sent)
	}{
		{name: "on time", at: 1000 * ms, now: 1000 * ms, echoAt: 1005 * ms},
		{name: "reactor 40 ms late", at: 1100 * ms, now: 1140 * ms, echoAt: 1145 * ms},
		{name: "backed up: skipped", at: 1200 * ms, now: 1200 * ms, backed: true},
		{name: "after the skip", at: 1300 * ms, now: 1300 * ms, echoAt: 1310 * ms},
	} {
		e := r.extOf(0)
		if step.backed {
			e.out = append(e.out[:0], 0)
		} else {
			e.out = e.out[:0]
		}
		m.timer(r, 0, step.at, step.now)
		if step.echoAt != 0 {
			r.frames(0, echoBack(t, br), step.echoAt)
		}
	}
	if err := r.rec.close(); err != nil { // the totals are made at the end
		t.Fatal(err)
	}
	rep := r.rec.rep
	if rep.Messages.Sent != 3 || rep.Messages.Delivered != 3 || rep.Messages.Skipped != 1 {
		t.Errorf("messages %+v", rep.Messages)
	}
	// From the actual send: 5, 5, 10 ms. From the scheduled one: 5, 45
	// (fired 40 ms late) and 110 ms (scheduled at the skipped 1200 ms slot).
	for _, c := range []struct {
		name   string
		want   map[int64]int64 // µs -> count
		actual int64
	}{
		{"rtt", map[int64]int64{5000: 2, 10000: 1}, rep.RTT.TotalCount()},
		{"rtt_scheduled", map[int64]int64{5000: 1, 45000: 1, 110000: 1}, rep.RTTScheduled.TotalCount()},
	} {
		h := rep.RTT
		if c.name == "rtt_scheduled" {
			h = rep.RTTScheduled
		}
		if c.actual != 3 {
			t.Errorf("%s: %d values, want 3", c.name, c.actual)
		}
		for v, n := range c.want {
			if got := countAt(h, v); got != n {
				t.Errorf("%s: %d values at %d µs, want %d", c.name, got, v, n)
			}
		}
	}
}

// countAt is how many values h holds equivalent to v.
func countAt(h *hdrhistogram.Histogram, v int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From <= v && v <= b.To {
			n += b.Count
		}
	}
	return n
}

// TestStampedeScheduledRTT: a message queued when its connection dropped
// and resent after the reconnect keeps the time it was first due: its
// round trip from the resend is 10 ms, from its schedule 2.02 s.
func TestStampedeScheduledRTT(t *testing.T) {
	const ms = int64(time.Millisecond)
	r, _ := pairedReactor(t, Config{Client: spec.Client{Mode: spec.ModeStampede, MsgRate: 10, MsgSize: 64}})
	h := r.mode.(*stampedeMode)
	h.connected(r, 0, 900*ms) // join
	h.sync(r, 0, 950*ms)
	h.timer(r, 0, 1000*ms, 1000*ms) // message 1, never ACKed on this connection
	h.closed(r, 0, 1050*ms)
	h.connected(r, 0, 3000*ms) // resume
	h.sync(r, 0, 3010*ms)      // resends message 1
	h.acked(r, 0, 1, 1, 3020*ms)
	if err := r.rec.close(); err != nil { // the totals are made at the end
		t.Fatal(err)
	}
	rep := r.rec.rep
	if rep.Messages.Sent != 1 || rep.Messages.Retried != 1 || rep.Messages.Acked != 1 {
		t.Errorf("messages %+v", rep.Messages)
	}
	if n := countAt(rep.RTT, 10000); n != 1 || rep.RTT.TotalCount() != 1 {
		t.Errorf("rtt: %d values at 10 ms of %d", n, rep.RTT.TotalCount())
	}
	if n := countAt(rep.RTTScheduled, 2020000); n != 1 || rep.RTTScheduled.TotalCount() != 1 {
		t.Errorf("rtt_scheduled: %d values at 2020 ms of %d", n, rep.RTTScheduled.TotalCount())
	}
}
