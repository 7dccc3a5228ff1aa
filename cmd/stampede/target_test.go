package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

func TestTargetBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // the one stderr line
	}{
		{name: "negative backlog", args: []string{"--backlog", "-1"},
			wantErr: "stampede: --backlog: -1 must not be negative\n"},
		{name: "rate not a number", args: []string{"--accept-rate", "fast"},
			wantErr: "stampede: --accept-rate: invalid value \"fast\": want a number\n"},
		{name: "host name", args: []string{"--addr", "example.com:80"},
			wantErr: "stampede: --addr: address \"example.com:80\": want a literal IP and a port, like 127.0.0.1:0 or [::1]:8080\n"},
		{name: "cert without key", args: []string{"--cert", "c.pem"},
			wantErr: "stampede: --cert: goes together with --key\n"},
		{name: "negative procs", args: []string{"--procs", "-2"},
			wantErr: "stampede: --procs: -2 must not be negative\n"},
		{name: "procs past the cap", args: []string{"--procs", "300"},
			wantErr: "stampede: --procs: 300 is above the cap of 256 server processes on one host\n"},
		{name: "rate too small to pace", args: []string{"--accept-rate", "0.0001"},
			wantErr: "stampede: --accept-rate: 0.0001 is too small: 0 (unlimited) or at least 0.001 per second\n"},
		{name: "limit status not a rate limit", args: []string{"--limit-status", "500"},
			wantErr: "stampede: --limit-status: 500 must be 429, 503 or 529\n"},
		{name: "negative http limit", args: []string{"--http-limit", "-1"},
			wantErr: "stampede: --http-limit: -1 must be a non-negative number\n"},
		{name: "stray argument", args: []string{"now"},
			wantErr: "stampede: target: unexpected argument \"now\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"stampede", "target"}, tc.args...), &stdout, &stderr)
			if code != 2 || stderr.String() != tc.wantErr {
				t.Fatalf("exit %d, stderr %q; want 2, %q", code, stderr.String(), tc.wantErr)
			}
		})
	}
}

// `stampede target` prints its ready line, serves, and exits 0 after a
// shutdown through its control API.
func TestTargetRun(t *testing.T) {
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- runApp([]string{"stampede", "target", "--backlog", "8"}, pw, &stderr)
		pw.Close()
	}()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr %q)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil || !line.Ready || line.Control == "" {
		t.Fatalf("ready line %q: %v", raw, err)
	}
	conn, _, _, err := ws.Dial(context.Background(), "ws://"+line.Addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := controlapi.NewRequest(context.Background(), "POST", "http://"+line.Control+"/shutdown?mode=graceful", line.Token)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Reading answers the close frame, so the server need not wait for
	// its CloseTimeout.
	if _, _, err := wsutil.ReadServerData(conn); err == nil {
		t.Fatal("read a message; want close 1001")
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("target did not exit after /shutdown")
	}
}

// `stampede target --http-limit` answers its HTTP endpoint 200 within the
// burst and --limit-status with --retry-after above it, and /stats counts
// both. The limit is the smallest allowed, so the second request is over
// it however slow the machine.
func TestTargetHTTPLimit(t *testing.T) {
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- runApp([]string{"stampede", "target", "--http-limit", "0.001", "--http-burst", "1",
			"--limit-status", "529", "--retry-after", "2s"}, pw, &stderr)
		pw.Close()
	}()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr %q)", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil {
		t.Fatalf("ready line %q: %v", raw, err)
	}
	control := func(method, path string) *http.Response {
		t.Helper()
		req, err := controlapi.NewRequest(context.Background(), method, "http://"+line.Control+path, line.Token)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	defer func() {
		control("POST", "/shutdown?mode=abrupt").Body.Close()
		select {
		case <-exit:
		case <-time.After(20 * time.Second):
			t.Error("target did not exit after /shutdown")
		}
	}()
	for i, want := range []struct {
		status     int
		retryAfter string
	}{{200, ""}, {529, "2"}, {529, "2"}} {
		resp, err := http.Post("http://"+line.Addr+target.HTTPPath, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want.status || resp.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("request %d: %d Retry-After %q, want %d %q", i, resp.StatusCode, resp.Header.Get("Retry-After"), want.status, want.retryAfter)
		}
	}
	resp := control("GET", "/stats")
	defer resp.Body.Close()
	var st target.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.HTTPStatus["200"] != 1 || st.HTTPStatus["529"] != 2 {
		t.Errorf("/stats http_status = %v, want 200: 1, 529: 2", st.HTTPStatus)
	}
}

// A second `stampede target` on a port a running server holds is refused
// with one line, exit 2, instead of joining its SO_REUSEPORT set.
func TestTargetPortInUse(t *testing.T) {
	first, err := listener.Listen("127.0.0.1:0", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	addr := first.Addr().String()
	var stdout, stderr bytes.Buffer
	code := runApp([]string{"stampede", "target", "--addr", addr}, &stdout, &stderr)
	want := "stampede: --addr: " + addr + " already has a listener; processes share a port only within one target group\n"
	if code != 2 || stderr.String() != want || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 2, no ready line, %q", code, stdout.String(), stderr.String(), want)
	}
}
