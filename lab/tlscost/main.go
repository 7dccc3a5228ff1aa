// Command tlscost measures what Go's crypto/tls charges a server for one
// handshake, full and resumed, for each certificate kind: the server
// goroutine's own CPU (tlsconf.Server.Handshake), over loopback TCP, with
// clients that keep their session (tlsconf.Session). lab/tls-storm.sh
// prints it beside the target's figures of the same run.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/stampede-dev/stampede/tlsconf"
)

func main() {
	n := flag.Int("n", 200, "handshakes of each kind per certificate kind")
	flag.Parse()
	fmt.Printf("%-12s %14s %16s %8s\n", "kind", "full µs", "resumed µs", "ratio")
	for _, k := range tlsconf.Kinds {
		st, err := measure(k, *n)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-12s %14.0f %16.0f %8.1f\n", k, st.FullCPUUs(), st.ResumedCPUUs(), st.FullCPUUs()/st.ResumedCPUUs())
	}
}

// measure makes n full and n resumed handshakes against a server of kind
// k and returns its counts.
func measure(k tlsconf.Kind, n int) (tlsconf.Stats, error) {
	s, err := tlsconf.NewServer(tlsconf.ServerOptions{Kind: k})
	if err != nil {
		return tlsconf.Stats{}, err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tlsconf.Stats{}, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, s.Config())
			if s.Handshake(tc) == nil {
				tc.Write([]byte{1}) // after the TLS 1.3 ticket
			}
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		var cache tlsconf.Session
		for range 2 { // full, then resumed
			c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, ClientSessionCache: &cache})
			if err != nil {
				return tlsconf.Stats{}, err
			}
			c.Read(make([]byte, 1))
			c.Close()
		}
	}
	st := s.Stats()
	if st.Full != uint64(n) || st.Resumed != uint64(n) {
		return st, fmt.Errorf("%s: %d full and %d resumed, want %d each", k, st.Full, st.Resumed, n)
	}
	return st, nil
}
