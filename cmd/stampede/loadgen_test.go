package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runLoadgen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "loadgen"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestLoadgenRefused: clients against a closed port give up after their
// attempts and the summary says why; --out writes summary.json.
func TestLoadgenRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	code, out, errOut := runLoadgen(t, "--url", "ws://"+addr+"/", "--clients", "4", "--duration", "300ms",
		"--policy", "fixed:initial=10ms,attempts=2", "--progress", "0", "--out", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"4 clients in 1 loadgen process(es)",
		"connect: 12 attempts, 0 successes, failures: refused 12\n",
		"stopped: 4 client(s) gave up after refused: refused: dial tcp " + addr + ": connect: connection refused\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Clients int `json:"clients"`
		Connect struct {
			Attempts uint64 `json:"attempts"`
		} `json:"connect"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Clients != 4 || s.Connect.Attempts != 12 {
		t.Errorf("summary.json: %+v %v", s, err)
	}
}

// TestLoadgenBadFlags: each bad value gives one line naming its flag.
func TestLoadgenBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"policy", []string{"--policy", "nope"}, "--policy: "},
		{"source range", []string{"--source-ips", "127.0.0.9-127.0.0.2"}, "--source-ips: "},
		{"clients", []string{"--clients", "0"}, "--clients: "},
		{"mode", []string{"--mode", "chat"}, "--mode: "},
		{"msg size", []string{"--msg-size", "3"}, "--msg-size: "},
		{"duration", []string{"--duration", "0s"}, "--duration: "},
		{"url", []string{"--url", "http://127.0.0.1/"}, "--url: "},
		{"too many clients", []string{"--clients", "10000000"}, "--clients 10000000 is above"},
		{"too few procs", []string{"--clients", "40000", "--loadgen-procs", "1"}, "--loadgen-procs 1 cannot hold 40000 clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--url", "ws://127.0.0.1:1/"}, tc.args...)
			code, _, errOut := runLoadgen(t, args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, errOut, tc.want)
			}
		})
	}
}
