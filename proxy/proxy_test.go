package proxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/internal/tcptest"
)

// startProxy starts a fault proxy in front of upstream, closed at cleanup.
func startProxy(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dialProxy connects to the proxy, closed at cleanup.
func dialProxy(t *testing.T, p *Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// TestProxyRelaysBytesIntact sends 4 MiB each way through the proxy with no
// fault: what comes back is what went out, and a half-close passes through
// (the echo server sees EOF and closes, the client then reads EOF).
func TestProxyRelaysBytesIntact(t *testing.T) {
	p := startProxy(t, Config{Upstream: tcptest.Echo(t)})
	c := dialProxy(t, p)
	data := make([]byte, 4<<20)
	rand.Read(data)
	c.SetDeadline(time.Now().Add(20 * time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes back, want the %d sent, intact", len(got), len(data))
	}
	st := p.Stats()
	if st.Accepted != 1 || st.BytesUp != uint64(len(data)) || st.BytesDown != uint64(len(data)) {
		t.Errorf("stats %+v: want 1 accepted, %d bytes each way", st, len(data))
	}
	waitActive(t, p, 0)
}

// waitActive waits (bounded) until the proxy has n links open.
func waitActive(t *testing.T, p *Proxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Stats().Active != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d links open, want %d", p.Stats().Active, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProxyMirrorsRefusedUpstream: while nothing listens upstream, the
// proxy closes its port so clients are refused as by the upstream (after
// the one whose connect found it down, which is reset), and listens again
// once the upstream is back.
func TestProxyMirrorsRefusedUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := startProxy(t, Config{Upstream: addr})
	if err := readReset(p.Addr()); !tcptest.IsReset(err) {
		t.Fatalf("first client: %v, want a reset", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("client while the upstream is down: %v, want connection refused", err)
	}
	if st := p.Stats(); st.Refused != 1 || st.Mirrored != 1 {
		t.Errorf("stats %+v: want 1 refused, 1 mirrored", st)
	}
	// Probes every 20 ms, one at a time: about 25 in half a second.
	time.Sleep(500 * time.Millisecond)
	if n := p.reactors[0].probes.Load(); n < 5 || n > 30 {
		t.Errorf("%d probes in 500 ms, want about 25 (one every %v)", n, proxyProbeInterval)
	}
	up, err := net.Listen("tcp", addr) // the upstream is back
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { up.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err == nil {
			err = tcptest.EchoOnce(c, []byte("back"), 2*time.Second)
			c.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy not relaying 5 s after the upstream came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProxyKeepListeningResetsClients: with KeepListening the port stays
// open and every client is reset while the upstream refuses.
func TestProxyKeepListeningResetsClients(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := startProxy(t, Config{Upstream: addr, KeepListening: true})
	for i := range 2 {
		if err := readReset(p.Addr()); !tcptest.IsReset(err) {
			t.Fatalf("client %d: %v, want a reset", i, err)
		}
	}
	if st := p.Stats(); st.Refused != 2 || st.Mirrored != 0 {
		t.Errorf("stats %+v: want 2 refused, none mirrored", st)
	}
}

// TestProxySetAfterClose: a supervisor that switches a fault off after the
// run closed the proxy must not write to descriptors that are gone.
func TestProxySetAfterClose(t *testing.T) {
	p, err := Start(Config{Upstream: "127.0.0.1:9", Reactors: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Set(fault.Set{Latency: time.Second})
	p.Set(fault.Set{})
	if got := p.Fault(); got != (fault.Set{}) {
		t.Errorf("Fault() = %+v after Set({})", got)
	}
	p.Close()
}
