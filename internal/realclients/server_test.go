package realclients

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// front is the server both fleets reconnect to: while up, it completes
// the WebSocket upgrade and plays just enough of the library's protocol
// for the client to count itself connected; once dropped, it closes every
// connection and refuses each new attempt by closing it after reading the
// request. It records when each attempt's TCP connection was accepted,
// and whose it was (?c=ID in the request line, or the loadgen's
// X-Stampede-Client header).
type front struct {
	t     *testing.T
	ln    net.Listener
	lib   string
	start time.Time

	mu        sync.Mutex
	down      bool
	droppedAt time.Duration
	held      map[net.Conn]int        // connection up -> its client
	attempts  map[int][]time.Duration // client -> accept offsets
	closes    map[int][]time.Duration // client -> offsets of the closes it saw
	stalls    map[int][]span          // process (goProc: this one) -> its stalls
	perProc   int                     // clients per Node process (client/perProc is its process); 0: none
}

// span is a stall: a stretch of time, as offsets, and the CPU time the
// stalled process used in it.
type span struct{ from, to, cpu time.Duration }

// starved reports whether the process got (almost) no CPU in the stall:
// less than half of it. A busy process (its own work, a long GC) used
// most of it.
func (s span) starved() bool { return s.cpu < (s.to-s.from)/2 }

// goProc is the stalls key of the test's own process (the fronts and
// stampede's fleet).
const goProc = -1

// stallGap is the gap between a probe's 5 ms ticks that counts as a
// stall.
const stallGap = 25 * time.Millisecond

// probe records this process's stalls until done closes: on a machine
// whose cores are busy with other work, a process can get no CPU for tens
// or hundreds of ms, and a retry due then arrives late by as much.
func (f *front) probe(done <-chan struct{}) {
	last, lastCPU := time.Since(f.start), cpuTime()
	for {
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
		}
		now, cpu := time.Since(f.start), cpuTime()
		if now-last > stallGap {
			f.stalled(goProc, span{last, now, cpu - lastCPU})
		}
		last, lastCPU = now, cpu
	}
}

// cpuTime is the CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stalled records a stall of process proc.
func (f *front) stalled(proc int, s span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stalls[proc] = append(f.stalls[proc], s)
}

func newFront(t *testing.T, lib string) *front {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &front{t: t, ln: ln, lib: lib, start: time.Now(), held: map[net.Conn]int{},
		attempts: map[int][]time.Duration{}, closes: map[int][]time.Duration{}, stalls: map[int][]span{}}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); f.drop(0, nil) })
	go f.probe(done)
	go f.accept()
	return f
}

func (f *front) url() string { return "ws://" + f.ln.Addr().String() }

func (f *front) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		at := time.Since(f.start)
		go f.serve(c, at)
	}
}

var (
	clientParam  = regexp.MustCompile(`[?&]c=(\d+)`)
	clientHeader = regexp.MustCompile(`(?i)\r\nX-Stampede-Client: *(\d+)`)
	protoHeader  = regexp.MustCompile(`(?i)\r\nSec-WebSocket-Protocol: *([^,\r]+)`)
	keyHeader    = regexp.MustCompile(`(?i)\r\nSec-WebSocket-Key: *([^\r]+)`)
)

// serve reads one upgrade request, records the attempt, then refuses it
// (down) or accepts it and plays the protocol (up).
func (f *front) serve(c net.Conn, at time.Duration) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var head bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		head.WriteString(line)
		if line == "\r\n" || head.Len() > 16<<10 {
			break
		}
	}
	req := head.String()
	m := clientParam.FindStringSubmatch(strings.SplitN(req, "\r\n", 2)[0])
	if m == nil {
		m = clientHeader.FindStringSubmatch(req)
	}
	if m == nil {
		return
	}
	id, _ := strconv.Atoi(m[1])
	f.mu.Lock()
	f.attempts[id] = append(f.attempts[id], at)
	down := f.down
	if !down {
		f.held[c] = id
	}
	f.mu.Unlock()
	if down {
		return
	}
	defer func() { f.mu.Lock(); delete(f.held, c); f.mu.Unlock() }()
	_ = c.SetReadDeadline(time.Time{})
	if err := f.upgrade(c, req); err != nil {
		return
	}
	f.play(struct {
		io.Reader
		io.Writer
	}{br, c})
}

// upgrade answers the request with 101, choosing the first subprotocol
// offered.
func (f *front) upgrade(c net.Conn, req string) error {
	k := keyHeader.FindStringSubmatch(req)
	if k == nil {
		return net.ErrClosed
	}
	sum := sha1.Sum([]byte(strings.TrimSpace(k[1]) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n"
	if p := protoHeader.FindStringSubmatch(req); p != nil {
		resp += "Sec-WebSocket-Protocol: " + strings.TrimSpace(p[1]) + "\r\n"
	}
	_, err := c.Write([]byte(resp + "\r\n"))
	return err
}

// rw is a connection read through the request's buffered reader.
type rw = io.ReadWriter

var commandID = regexp.MustCompile(`"id":(\d+)`)

// play is each library's server side, as little as keeps its client
// connected (written from the protocols' documents; see docs/clients.md).
func (f *front) play(c rw) {
	text := func(s string) { _ = wsutil.WriteServerText(c, []byte(s)) }
	switch f.lib {
	case "socketio": // Engine.IO 4 open packet
		text(`0{"sid":"s","upgrades":[],"pingInterval":600000,"pingTimeout":600000,"maxPayload":1000000}`)
	case "nats":
		_ = wsutil.WriteServerBinary(c, []byte("INFO {\"server_id\":\"s\",\"version\":\"2.10.0\",\"proto\":1,\"max_payload\":1048576,\"headers\":true}\r\n"))
	}
	for {
		msg, op, err := wsutil.ReadClientData(c)
		if err != nil {
			return
		}
		s := string(msg)
		switch {
		case f.lib == "socketio" && strings.HasPrefix(s, "40"):
			text(`40{"sid":"n"}`)
		case f.lib == "centrifuge" && strings.Contains(s, `"connect"`):
			if m := commandID.FindStringSubmatch(s); m != nil {
				text(`{"id":` + m[1] + `,"connect":{"client":"c","version":"0.0.0"}}`)
			}
		case f.lib == "graphql-ws" && strings.Contains(s, "connection_init"):
			text(`{"type":"connection_ack"}`)
		case f.lib == "mqttjs" && op == ws.OpBinary && len(msg) > 0 && msg[0] == 0x10:
			_ = wsutil.WriteServerBinary(c, []byte{0x20, 0x02, 0x00, 0x00}) // CONNACK
		case f.lib == "stompjs" && (strings.HasPrefix(s, "CONNECT") || strings.HasPrefix(s, "STOMP")):
			text("CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00")
		case f.lib == "nats" && strings.Contains(s, "PING"):
			_ = wsutil.WriteServerBinary(c, []byte("PONG\r\n"))
		}
	}
}

// heldCount is the number of connections up.
func (f *front) heldCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held)
}

// drop kills the server: every later attempt refused, and every
// connection closed, all at once, or one at a time, spread apart, in
// the order of rank(client) when spread is set. The refusals start at
// once either way; each client's retries are timed from the close it saw,
// so a spread drop changes no interval the comparison reads, only how
// many clients retry in the same few ms.
func (f *front) drop(spread time.Duration, rank func(client int) int) {
	f.mu.Lock()
	if !f.down {
		f.down, f.droppedAt = true, time.Since(f.start)
	}
	conns := make([]net.Conn, 0, len(f.held))
	for c := range f.held {
		conns = append(conns, c)
	}
	if rank != nil {
		slices.SortFunc(conns, func(a, b net.Conn) int { return rank(f.held[a]) - rank(f.held[b]) })
	}
	f.mu.Unlock()
	next := time.Now()
	for _, c := range conns {
		if spread > 0 {
			time.Sleep(time.Until(next))
			next = next.Add(spread)
		}
		c.Close()
	}
}

// sawClose records that client id saw its connection or attempt end at
// offset at: the instant its library's reconnect timer starts from.
func (f *front) sawClose(id int, at time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes[id] = append(f.closes[id], at)
}

// sawCloseAt records a close seen at wall-clock time w (another process's
// clock: the same host's).
func (f *front) sawCloseAt(id int, w time.Time) { f.sawClose(id, w.Sub(f.start.Round(0))) }

// history is one client's attempts after the drop, the closes it saw
// from the drop on, and the starved stalls of the processes that timed
// it (its Node process's, and this one's, which timed every arrival), all
// sorted, as offsets from the drop.
type history struct {
	attempts, closes []time.Duration
	starved          []span
}

// longestStall is the longest stall of a process since the drop.
func (f *front) longestStall() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var d time.Duration
	for _, ss := range f.stalls {
		for _, s := range ss {
			if s.to > f.droppedAt {
				d = max(d, s.to-max(s.from, f.droppedAt))
			}
		}
	}
	return d
}

// retries returns each client's history after the drop. A close seen up
// to 50 ms before the drop instant counts: two processes' clocks.
func (f *front) retries() map[int]history {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int]history{}
	after := func(ats []time.Duration, slack time.Duration) []time.Duration {
		var v []time.Duration
		for _, at := range ats {
			if at >= f.droppedAt-slack {
				v = append(v, at-f.droppedAt)
			}
		}
		slices.Sort(v)
		return v
	}
	starved := func(proc int) []span {
		var v []span
		for _, s := range f.stalls[proc] {
			if s.starved() && s.to > f.droppedAt {
				v = append(v, span{s.from - f.droppedAt, s.to - f.droppedAt, s.cpu})
			}
		}
		return v
	}
	ours := starved(goProc)
	for id, ats := range f.attempts {
		h := history{attempts: after(ats, 0), closes: after(f.closes[id], 50*time.Millisecond), starved: ours}
		if f.perProc > 0 {
			h.starved = append(starved(id/f.perProc), ours...)
		}
		out[id] = h
	}
	return out
}
