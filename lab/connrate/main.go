// Command connrate is the yardstick for stampede's connection rate: the
// simplest Go client that opens N WebSocket connections, a goroutine per
// connection doing gobwas/ws's Dial (TCP connect, then the HTTP upgrade),
// nothing else. lab/connrate.sh runs it and `stampede loadgen` against
// the same kind of target and compares their rates.
//
//	go -C lab run ./connrate -url ws://127.0.0.1:PORT/ -n 15000
//
// It prints one line:
//
//	connrate: 15000 connections within 0.812s (18473/s), 0 failed
//
// where the time runs from the first dial to the last completed upgrade,
// the same measure as stampede loadgen's "first connects" line. Every
// connection stays open until all dials have ended, so the target holds the
// whole fleet at once, as it does for stampede.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
)

func main() {
	url := flag.String("url", "", "WebSocket `URL` of the target, e.g. ws://127.0.0.1:7001/")
	n := flag.Int("n", 15000, "connections `N` to open")
	timeout := flag.Duration("timeout", time.Minute, "give up on dials still pending after `D`")
	flag.Parse()
	if *url == "" || *n < 1 || *timeout <= 0 {
		fmt.Fprintln(os.Stderr, "connrate: -url is required, -n and -timeout must be positive")
		os.Exit(2)
	}
	ok, failed, last, firstErr := dialAll(*url, *n, *timeout)
	rate := 0.0
	if last > 0 {
		rate = float64(ok) / last.Seconds()
	}
	fmt.Printf("connrate: %d connections within %.3fs (%.0f/s), %d failed\n", ok, last.Seconds(), rate, failed)
	if firstErr != nil {
		fmt.Fprintln(os.Stderr, "connrate: first error:", firstErr)
	}
	if ok != *n {
		os.Exit(1)
	}
}

// dialAll opens n connections at once, one goroutine each, and returns how
// many were upgraded, how many failed, the time from the start to the last
// upgrade, and the first error.
func dialAll(url string, n int, timeout time.Duration) (ok, failed int, last time.Duration, firstErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conns := make([]net.Conn, n)
	var (
		wg      sync.WaitGroup
		nFailed atomic.Int64
		lastNs  atomic.Int64
		errOnce sync.Once
	)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, _, err := ws.Dial(ctx, url)
			if err != nil {
				nFailed.Add(1)
				errOnce.Do(func() { firstErr = err })
				return
			}
			conns[i] = c
			d := int64(time.Since(start))
			for {
				cur := lastNs.Load()
				if d <= cur || lastNs.CompareAndSwap(cur, d) {
					break
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range conns {
		if c != nil {
			ok++
			c.Close()
		}
	}
	return ok, int(nFailed.Load()), time.Duration(lastNs.Load()), firstErr
}
