package main

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/target"
)

func TestProxyBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // the one stderr line
	}{
		{"no upstream", []string{}, "stampede: --upstream: required (stampede proxy --help)\n"},
		{"upstream without port", []string{"--upstream", "127.0.0.1"},
			"stampede: --upstream: \"127.0.0.1\": want host:port\n"},
		{"listen on a name", []string{"--upstream", "127.0.0.1:9", "--listen", "example.com:80"},
			"stampede: --listen \"example.com:80\": want IP:PORT, e.g. 127.0.0.1:7100\n"},
		{"too many reactors", []string{"--upstream", "127.0.0.1:9", "--reactors", "100"},
			"stampede: --reactors: must be within 0..64, got 100\n"},
		{"bad fault", []string{"--upstream", "127.0.0.1:9", "--fault", "latency=5x"},
			"stampede: --fault: proxy fault \"latency=5x\", col 9: expected a duration after \"latency=\", found \"5x\"\n"},
		{"schedule with a restart", []string{"--upstream", "127.0.0.1:9", "--chaos", "at 1s restart"},
			"stampede: --chaos: line 1: \"at 1s restart\" is a restart event: a proxy on its own applies only proxy events\n"},
		{"schedule that does not parse", []string{"--upstream", "127.0.0.1:9", "--chaos", "at 1s proxy latency=1s"},
			"stampede: --chaos: line 1, col 23: expected \"for\" and a duration after \"proxy latency=1s\", found end of entry\n"},
		{"schedule past the end", []string{"--upstream", "127.0.0.1:9", "--chaos", "at 5s proxy reset for 1s", "--duration", "2s"},
			"stampede: --chaos: line 1: \"at 5s proxy reset for 1s\" fires at 5s, not before the run ends at 2s\n"},
		{"stray argument", []string{"--upstream", "127.0.0.1:9", "now"}, "stampede: proxy: unexpected argument \"now\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := runApp(append([]string{"stampede", "proxy"}, tt.args...), &out, &errw)
			if code != 2 || errw.String() != tt.wantErr {
				t.Errorf("exit %d, stderr %q; want 2, %q", code, errw.String(), tt.wantErr)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q; want nothing (no help text before the error)", out.String())
			}
		})
	}
}

// TestProxyCommandRelays runs `stampede proxy` for two seconds in front of an
// in-process target: it prints its ready line, relays, and reports its
// counters on stderr when the duration ends.
func TestProxyCommandRelays(t *testing.T) {
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	var errw bytes.Buffer
	outR, outW := net.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- runApp([]string{"stampede", "proxy", "--upstream", srv.Addr().String(), "--duration", "2s", "--fault", "latency=1ms"}, outW, &errw)
		outW.Close()
	}()
	outR.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := outR.Read(buf)
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	var line childproc.ReadyLine
	if err := json.Unmarshal(buf[:n], &line); err != nil || !line.Ready {
		t.Fatalf("ready line %q: %v", buf[:n], err)
	}
	c, err := net.DialTimeout("tcp", line.Addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	go func() { outR.Read(buf) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errw.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not stop after --duration 2s")
	}
	if !strings.Contains(errw.String(), "proxy: 1 accepted") {
		t.Errorf("stderr %q: want the final counters", errw.String())
	}
}
