// Command hsmem measures what a TLS client handshake waiting for its
// server holds: -n crypto/tls client handshakes (TLS 1.3, a session cache
// each, as the loadgen's wss:// clients) against a loopback listener that
// accepts and never answers, each on its goroutine, parked after its
// ClientHello; then the heap and goroutine stacks in use, after a
// collection, over the handshakes (the listener's side of each connection
// included, a few hundred bytes). -groups x25519 offers X25519 alone, as
// the loadgen's --tls-groups x25519; the default offers crypto/tls's
// groups, X25519MLKEM768 first. docs/tls.md has its figures.
//
//	go -C lab run ./hsmem [-n 4000] [-groups x25519]
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"runtime"
	"time"
)

func main() {
	n := flag.Int("n", 4000, "handshakes held (each a connection: keep it under the open-file limit over 2)")
	groups := flag.String("groups", "", `"x25519": offer X25519 alone; empty: crypto/tls's default groups`)
	flag.Parse()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	held := make(chan net.Conn, *n)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // kept open, never read
		}
	}()
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	switch *groups {
	case "":
	case "x25519":
		cfg.CurvePreferences = []tls.CurveID{tls.X25519}
	default:
		log.Fatalf("-groups: want x25519 or nothing, got %q", *groups)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range *n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		hc := cfg.Clone()
		hc.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		go tls.Client(c, hc).Handshake() // it never ends: what it holds meanwhile is the point
	}
	time.Sleep(2 * time.Second) // every ClientHello written, every goroutine parked
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := func(a, b uint64) uint64 { return (a - b) / uint64(*n) }
	fmt.Printf("groups %q, %d handshakes waiting: heap %d B, stacks %d B a handshake\n", *groups, *n,
		per(after.HeapInuse, before.HeapInuse), per(after.StackInuse, before.StackInuse))
}
