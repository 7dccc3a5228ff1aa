package tlsconf

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// costTimeout bounds each handshake of MeasureCost.
const costTimeout = 10 * time.Second

// MeasureCost measures what Go's crypto/tls charges a server of
// certificate kind k per handshake on this machine: n full and n resumed
// handshakes over loopback TCP, one at a time, each client keeping its
// session (Session) for its second, resumed, handshake. It returns the
// server's counts (Server.Handshake: its goroutine's own CPU) and the
// clients' (the same clock around each client's handshake).
func MeasureCost(k Kind, n int) (srv, cl Stats, err error) {
	s, err := NewServer(ServerOptions{Kind: k})
	if err != nil {
		return srv, cl, err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return srv, cl, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(costTimeout))
			tc := tls.Server(c, s.Config())
			if s.Handshake(tc) == nil {
				tc.Write([]byte{1}) // after the TLS 1.3 ticket
			}
			c.Close()
		}
	}()
	d := &net.Dialer{Timeout: costTimeout}
	for range n {
		var cache Session
		for range 2 { // full, then resumed
			if err := costDial(d, ln.Addr().String(), &cache, &cl); err != nil {
				return srv, cl, err
			}
		}
	}
	srv = s.Stats()
	if srv.Full != uint64(n) || srv.Resumed != uint64(n) || cl.Full != uint64(n) || cl.Resumed != uint64(n) {
		return srv, cl, fmt.Errorf("tlsconf: %s: server %d full and %d resumed handshakes, client %d and %d, want %d each",
			k, srv.Full, srv.Resumed, cl.Full, cl.Resumed, n)
	}
	return srv, cl, nil
}

// costDial makes one handshake to addr, counting the client's CPU for it
// in cl, and reads the server's byte (and with it a TLS 1.3 ticket).
func costDial(d *net.Dialer, addr string, cache *Session, cl *Stats) error {
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(costTimeout))
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: "127.0.0.1", ClientSessionCache: cache})
	ns, resumed, err := timedHandshake(tc)
	if err != nil {
		return err
	}
	if resumed {
		cl.Resumed++
		cl.ResumedCPUNS += ns
	} else {
		cl.Full++
		cl.FullCPUNS += ns
	}
	_, err = tc.Read(make([]byte, 1))
	return err
}
