package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/target"
)

// maxIdleClientHeap bounds the live Go heap per idle connected client of
// TestIdleClientHeap, the fleet's fixed buffers shared out among its
// clients included. Measured: about 160 B at 3,000 clients (a 48-byte
// client, its 16-byte keepalive and timer entries, its 16-byte Up
// transition, and reactor buffers and recorders shared out). A loadgen worker
// keeps about 18,000 clients in some 17 MiB of RSS, about half of it the
// binary's pages and the runtime (docs/sizing.md, "Memory per
// connection"), so a few hundred bytes more per client would already
// break its budget of 1 KiB per client.
const maxIdleClientHeap = 400

// heapServerEnv makes the test binary the server of TestIdleClientHeap
// (TestIdleClientHeapServer), in a process of its own so that its memory
// is not the fleet's.
const heapServerEnv = "STAMPEDE_TEST_HEAP_SERVER"

// TestIdleClientHeap: the live Go heap a streamed fleet (what a loadgen
// worker runs) holds per idle connected client, measured with
// runtime/metrics after a collection, with 3,000 real connections to the
// bundled target in another process, drained as a worker drains, must
// stay under maxIdleClientHeap.
func TestIdleClientHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 connections")
	}
	per := idleClientHeap(t, 3000)
	t.Logf("live heap per idle client: %.0f B (bound %d B)", per, maxIdleClientHeap)
	if per > maxIdleClientHeap {
		t.Errorf("the fleet holds %.0f B of live heap per idle client, more than %d B", per, maxIdleClientHeap)
	}
}

// BenchmarkIdleClientHeap prints the live heap per idle connected client
// at 15,000 clients, about one worker's share (a load run: take the heavy
// lock):
//
//	flock "$STAMPEDE_LOCK" go test -run '^$' -bench IdleClientHeap -benchtime 1x ./loadgen
func BenchmarkIdleClientHeap(b *testing.B) {
	for range b.N {
		b.ReportMetric(idleClientHeap(b, 15000), "heap-B/client")
	}
}

// TestIdleClientHeapServer is the server process of idleClientHeap: the
// bundled target, its URL on stdout, until stdin closes.
func TestIdleClientHeapServer(t *testing.T) {
	if os.Getenv(heapServerEnv) == "" {
		t.Skip("the server process of TestIdleClientHeap")
	}
	srv, err := target.Start(target.Config{Backlog: 4096})
	if err != nil {
		t.Fatal(err)
	}
	<-srv.Ready()
	fmt.Println(srv.URL())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	srv.Shutdown(target.Abrupt)
}

// idleClientHeap connects n clients of a streamed fleet to a target in
// another process and returns the live heap they added per client.
func idleClientHeap(tb testing.TB, n int) float64 {
	tb.Helper()
	srv := exec.Command(os.Args[0], "-test.run=^TestIdleClientHeapServer$")
	srv.Env = append(os.Environ(), heapServerEnv+"=1")
	srv.Stderr = os.Stderr
	stdin, err := srv.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = srv.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("server: %v", err)
	}
	url := strings.TrimSpace(line)

	before := liveHeap()
	f, err := NewStreamed(Config{
		URL: url, Clients: n, Seed: 1,
		Policy: backoff.Policy{Kind: backoff.Exp, Initial: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := f.Run(ctx); done <- err }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for f.Stats().Connected < int64(n) {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d connected", f.Stats().Connected, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Drained as a worker drains, every result sent on; then idle.
	for range 2 {
		if _, err := f.Drain(results.End, 0); err != nil {
			tb.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return float64(liveHeap()-before) / float64(n)
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
