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
// server's counts (Server.Handshake: its goroutine's own CPU).
func MeasureCost(k Kind, n int) (Stats, error) {
	s, err := NewServer(ServerOptions{Kind: k})
	if err != nil {
		return Stats{}, err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Stats{}, err
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
			if err := costDial(d, ln.Addr().String(), &cache); err != nil {
				return Stats{}, err
			}
		}
	}
	st := s.Stats()
	if st.Full != uint64(n) || st.Resumed != uint64(n) {
		return st, fmt.Errorf("tlsconf: %s: %d full and %d resumed handshakes, want %d each", k, st.Full, st.Resumed, n)
	}
	return st, nil
}

// costDial makes one handshake to addr and reads the server's byte (and
// with it a TLS 1.3 ticket).
func costDial(d *net.Dialer, addr string, cache *Session) error {
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(costTimeout))
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, ServerName: "127.0.0.1", ClientSessionCache: cache})
	if err := tc.Handshake(); err != nil {
		return err
	}
	_, err = tc.Read(make([]byte, 1))
	return err
}
