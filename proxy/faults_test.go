package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/internal/tcptest"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/wsdial"
)

// wsEcho starts the bundled target (gobwas echo server) on loopback.
func wsEcho(t *testing.T) *target.Server {
	t.Helper()
	s, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(target.Abrupt) })
	return s
}

// wsDial dials ws://addr/ with the given handshake timeout (0: 5 s).
func wsDial(t *testing.T, addr string, handshake time.Duration) (*wsdial.Conn, error) {
	t.Helper()
	if handshake == 0 {
		handshake = 5 * time.Second
	}
	d := &wsdial.Dialer{ConnectTimeout: 2 * time.Second, HandshakeTimeout: handshake}
	c, err := d.Dial(context.Background(), "ws://"+addr+"/")
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// rtt sends one text message and times its echo.
func rtt(c *wsdial.Conn, msg string) (time.Duration, error) {
	start := time.Now()
	if err := c.WriteMessage(ws.OpText, []byte(msg)); err != nil {
		return 0, err
	}
	p, _, err := c.ReadMessage()
	if err != nil {
		return 0, err
	}
	if string(p) != msg {
		return 0, errors.New("echo differs: " + string(p))
	}
	return time.Since(start), nil
}

// medianRTT returns the median of n round trips on c.
func medianRTT(t *testing.T, c *wsdial.Conn, n int) time.Duration {
	t.Helper()
	var d []time.Duration
	for i := range n {
		x, err := rtt(c, strings.Repeat("x", 10+i))
		if err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		d = append(d, x)
	}
	slices.Sort(d)
	return d[n/2]
}

// TestProxyLatencyRaisesRTT: latency=200ms delays each direction, so the
// echo round trip grows by at least 400 ms (the issue asks for at least
// 200); switching the fault off brings it back below that.
func TestProxyLatencyRaisesRTT(t *testing.T) {
	srv := wsEcho(t)
	direct, err := wsDial(t, srv.Addr().String(), 0)
	if err != nil {
		t.Fatal(err)
	}
	base := medianRTT(t, direct, 3)

	p := startProxy(t, Config{Upstream: srv.Addr().String()})
	c, err := wsDial(t, p.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Set(fault.Set{Latency: 200 * time.Millisecond})
	slow := medianRTT(t, c, 3)
	if slow < 400*time.Millisecond || slow < base+200*time.Millisecond {
		t.Errorf("RTT p50 with latency=200ms is %v (direct %v): want at least 400 ms", slow, base)
	}
	p.Set(fault.Set{})
	if off := medianRTT(t, c, 3); off >= 400*time.Millisecond {
		t.Errorf("RTT p50 after the fault ended is %v: want the fault gone (< 400 ms)", off)
	}
}

// TestProxyLatencyJitterKeepsOrder: with jitter as large as the latency,
// chunks get different delays, but a stream is never reordered.
func TestProxyLatencyJitterKeepsOrder(t *testing.T) {
	p := startProxy(t, Config{Upstream: tcptest.Echo(t), Seed: 3})
	p.Set(fault.Set{Latency: 20 * time.Millisecond, Jitter: 20 * time.Millisecond})
	c := dialProxy(t, p)
	const n = 60
	go func() {
		var b [4]byte
		for i := range uint32(n) {
			binary.BigEndian.PutUint32(b[:], i)
			c.Write(b[:])
			time.Sleep(time.Millisecond) // separate chunks, separate draws
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 4*n)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	for i := range uint32(n) {
		if v := binary.BigEndian.Uint32(got[4*i:]); v != i {
			t.Fatalf("word %d is %d: the stream was reordered", i, v)
		}
	}
}

// TestProxyBandwidthLimitsThroughput: 50,000 bytes at bandwidth=100KB/s
// take at least (50,000 - 2,000 burst) / 100,000 s = 480 ms to get through.
func TestProxyBandwidthLimitsThroughput(t *testing.T) {
	p := startProxy(t, Config{Upstream: tcptest.Echo(t)})
	p.Set(fault.Set{Bandwidth: 100_000})
	c := dialProxy(t, p)
	data := bytes.Repeat([]byte("0123456789"), 5000)
	start := time.Now()
	if err := tcptest.EchoOnce(c, data, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 480*time.Millisecond {
		t.Errorf("50,000 bytes at 100KB/s took %v: want at least 480 ms", took)
	}
}

// TestProxyResetGives1006: reset ends an established WebSocket with
// closed_1006 and resets a new connection during the handshake; once the
// fault is off, clients connect again.
func TestProxyResetGives1006(t *testing.T) {
	srv := wsEcho(t)
	p := startProxy(t, Config{Upstream: srv.Addr().String()})
	c, err := wsDial(t, p.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan *connerr.Error, 1)
	go func() { ended <- c.Wait() }()
	p.Set(fault.Set{Reset: true})
	select {
	case e := <-ended:
		if e == nil || e.Class != connerr.Closed1006 {
			t.Errorf("established client ended with %v, want closed_1006", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("established client not reset within 5 s")
	}
	_, err = wsDial(t, p.Addr(), 0)
	var ce *connerr.Error
	if !errors.As(err, &ce) || (ce.Class != connerr.Reset && ce.Class != connerr.Closed1006) {
		t.Errorf("dial during reset: %v, want class reset", err)
	}
	if st := p.Stats(); st.Reset != 2 {
		t.Errorf("stats reset %d, want 2 (one established, one new)", st.Reset)
	}
	p.Set(fault.Set{})
	c2, err := wsDial(t, p.Addr(), 0)
	if err != nil {
		t.Fatalf("dial after the fault: %v", err)
	}
	if _, err := rtt(c2, "back"); err != nil {
		t.Fatalf("echo after the fault: %v", err)
	}
}

// TestProxyBlackholeTimesOut: during a blackhole an established client gets
// no echo (and is not closed) and a new client's handshake times out; after
// it, new clients are served.
func TestProxyBlackholeTimesOut(t *testing.T) {
	srv := wsEcho(t)
	p := startProxy(t, Config{Upstream: srv.Addr().String()})
	c, err := wsDial(t, p.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rtt(c, "before"); err != nil {
		t.Fatal(err)
	}
	p.Set(fault.Set{Blackhole: true})
	c.NetConn().SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = rtt(c, "during")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("echo during blackhole: %v, want a read timeout (no echo, no close)", err)
	}
	_, err = wsDial(t, p.Addr(), 300*time.Millisecond)
	var ce *connerr.Error
	if !errors.As(err, &ce) || ce.Class != connerr.HandshakeTimeout {
		t.Errorf("dial during blackhole: %v, want handshake_timeout", err)
	}
	st := p.Stats()
	if st.Blackholed != 1 || st.Swallowed == 0 {
		t.Errorf("stats %+v: want 1 blackholed link and swallowed bytes", st)
	}
	p.Set(fault.Set{})
	c2, err := wsDial(t, p.Addr(), 0)
	if err != nil {
		t.Fatalf("dial after the blackhole: %v", err)
	}
	if _, err := rtt(c2, "after"); err != nil {
		t.Fatalf("echo after the blackhole: %v", err)
	}
}

// TestProxyLossDropsSeededShare: loss=30% drops exactly the links whose
// seeded draw falls below 0.3: 20 established when the fault starts and 20
// accepted during it. With seed 7 that is 15 of 40.
func TestProxyLossDropsSeededShare(t *testing.T) {
	const seed, n = 7, 20
	p := startProxy(t, Config{Upstream: tcptest.Echo(t), Seed: seed})
	var conns []*net.TCPConn
	for i := range n {
		c := dialProxy(t, p)
		if err := tcptest.EchoOnce(c, []byte{byte(i)}, 5*time.Second); err != nil { // accepted in dial order
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	p.Set(fault.Set{Loss: 0.3}) // generation 1
	dropped := 0
	for i, c := range conns {
		want := lost(seed, linkKey(0, 0, uint64(i)), 1, 0.3)
		err := tcptest.EchoOnce(c, []byte("x"), 5*time.Second)
		if got := err != nil; got != want {
			t.Errorf("established link %d: echo error %v, want dropped=%v", i, err, want)
		}
		if want {
			dropped++
		}
	}
	for i := n; i < 2*n; i++ {
		want := lost(seed, linkKey(0, 0, uint64(i)), 1, 0.3)
		var err error
		if want {
			err = readReset(p.Addr())
			if !tcptest.IsReset(err) {
				t.Errorf("new link %d: %v, want a reset", i, err)
			}
			dropped++
		} else {
			c := dialProxy(t, p)
			if err := tcptest.EchoOnce(c, []byte("y"), 5*time.Second); err != nil {
				t.Errorf("new link %d: %v, want it relayed", i, err)
			}
		}
	}
	// 11 of 40 for seed 7 with backoff.StreamProxyLoss: pinned, so a change
	// to the draws (which would change every seeded run) shows here.
	if st := p.Stats(); st.Dropped != uint64(dropped) || dropped != 11 {
		t.Errorf("dropped %d (stats %d), want exactly 11 for seed %d", dropped, st.Dropped, seed)
	}
}

// TestProxySwitchingUnderLoad flips faults while links stream data: bytes
// are delayed and throttled but never lost, duplicated or reordered.
func TestProxySwitchingUnderLoad(t *testing.T) {
	p := startProxy(t, Config{Upstream: tcptest.Echo(t), Reactors: 2, Seed: 1})
	faults := []fault.Set{
		{Latency: 5 * time.Millisecond, Jitter: 5 * time.Millisecond},
		{Bandwidth: 4 << 20},
		{},
		{Latency: time.Millisecond, Bandwidth: 1 << 20},
	}
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				p.Set(faults[i%len(faults)])
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for k := range 4 {
		c := dialProxy(t, p)
		wg.Go(func() {
			data := make([]byte, 512<<10)
			for i := range data {
				data[i] = byte(i*7 + k)
			}
			c.SetDeadline(time.Now().Add(20 * time.Second))
			go func() {
				for off := 0; off < len(data); {
					n := min(len(data)-off, 1+(off*31)%9000)
					if _, err := c.Write(data[off : off+n]); err != nil {
						return
					}
					off += n
				}
			}()
			got := make([]byte, len(data))
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, data) {
				errs <- errors.New("stream corrupted")
			}
		})
	}
	wg.Wait()
	close(stop)
	flips.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestProxyMaxConnsResetsTheExtra: above MaxConns a connection is reset at
// once and counted as refused.
func TestProxyMaxConnsResetsTheExtra(t *testing.T) {
	p := startProxy(t, Config{Upstream: tcptest.Echo(t), MaxConns: 1})
	c := dialProxy(t, p)
	if err := tcptest.EchoOnce(c, []byte("a"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := readReset(p.Addr()); !tcptest.IsReset(err) {
		t.Errorf("second connection: %v, want a reset", err)
	}
	if st := p.Stats(); st.Refused != 1 || st.Active != 1 {
		t.Errorf("stats %+v: want 1 refused, 1 active", st)
	}
}

// TestProxyUpstreamConnectTimeout: an upstream whose accept queue is full
// never answers the SYN; after ConnectTimeout the client is reset.
func TestProxyUpstreamConnectTimeout(t *testing.T) {
	fd, addr, err := listenReusePort(netipLoopback0(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFD(fd) })
	for range 2 { // backlog 0 holds one; the rest hang in SYN-SENT
		if c, err := net.DialTimeout("tcp", addr.String(), 200*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	p := startProxy(t, Config{Upstream: addr.String(), ConnectTimeout: 300 * time.Millisecond})
	start := time.Now()
	if err := readReset(p.Addr()); !tcptest.IsReset(err) {
		t.Fatalf("got %v, want a reset after the connect timeout", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("reset after %v, before the 300 ms connect timeout", took)
	}
	if st := p.Stats(); st.Refused != 1 {
		t.Errorf("refused %d, want 1", st.Refused)
	}
}
