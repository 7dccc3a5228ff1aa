package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stampede-dev/stampede/results/folder"
)

// countingListener is a server on 127.0.0.1 that accepts and closes every
// connection, counting them: a check made before any socket opens leaves
// it at 0.
func countingListener(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), accepted
}

// TestChecksBeforeSockets: what a run needs is checked before any socket
// opens, each failure one line naming the flag, exit 2: source addresses
// not on this host, a port out of range, a host that does not resolve,
// an output path under a regular file, an SLO of another kind of run, one
// that cannot pass or a recovery figure with nothing to recover from, a
// URL without a scheme, a number that is not finite. The server the URL
// names sees no connection, and no results folder is left.
func TestChecksBeforeSockets(t *testing.T) {
	addr, accepted := countingListener(t)
	ws, web := "ws://"+addr+"/", "http://"+addr+"/"
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	fleet := []string{"--clients", "2", "--duration", "1s", "--progress", "0"}
	nanConfig := filepath.Join(dir, "nan.yaml")
	if err := os.WriteFile(nanConfig, []byte("accept-rate: NaN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // the start of the one line after "stampede: "
	}{
		// 192.0.2.1 is TEST-NET-1: never an address of this host.
		{"loadgen source ips", []string{"loadgen", "--url", ws, "--source-ips", "192.0.2.1"}, "--source-ips: 192.0.2.1 is not an address of this host"},
		{"run source ips", []string{"run", "--source-ips", "192.0.2.1", "--out", out}, "--source-ips: 192.0.2.1 is not an address of this host"},
		{"drill source ips", []string{"drill", "--url", ws, "--restart-cmd", "true", "--source-ips", "192.0.2.1", "--out", out}, "--source-ips: 192.0.2.1"},
		{"loadgen port", []string{"loadgen", "--url", "ws://127.0.0.1:99999/"}, `--url: port "99999" is out of range`},
		{"drill port", []string{"drill", "--url", "ws://127.0.0.1:0/", "--restart-cmd", "true", "--out", out}, `--url: port "0" is out of range`},
		{"http port", []string{"http", "http://127.0.0.1:99999/"}, `http: bad URL: port "99999" is out of range`},
		{"http fleet port", []string{"http", "--clients", "2", "http://127.0.0.1:65536/"}, `http: bad URL: port "65536" is out of range`},
		{"loadgen scheme", []string{"loadgen", "--url", web}, `--url: scheme must be ws or wss, got "http"`},
		{"loadgen no such host", []string{"loadgen", "--url", "ws://nonexistent.invalid/", "--allow-remote", "nonexistent.invalid"}, "--url: host nonexistent.invalid does not resolve"},
		{"http no such host", []string{"http", "http://nonexistent.invalid/", "--allow-remote", "nonexistent.invalid"}, "http: bad URL: host nonexistent.invalid does not resolve"},
		{"loadgen out", []string{"loadgen", "--url", ws, "--out", filepath.Join(file, "x")}, "--out: " + file + " is a file, not a folder"},
		{"run out", []string{"run", "--out", file}, "--out: " + file + " is a file, not a folder"},
		{"simulate out", []string{"simulate", "--out", filepath.Join(file, "x")}, "--out: " + file + " is a file"},
		{"http fleet out", []string{"http", "--clients", "2", "--out", filepath.Join(file, "x"), web}, "--out: " + file + " is a file"},
		{"drill junit", []string{"drill", "--url", ws, "--restart-cmd", "true", "--junit", filepath.Join(file, "x.xml"), "--out", out}, "--junit: " + file + " is a file, not a folder"},
		{"report out", []string{"report", "--out", filepath.Join(file, "x.html"), dir}, "--out: " + file + " is a file, not a folder"},
		{"http slo on a websocket run", []string{"loadgen", "--url", ws, "--slo", "http_p99<1s"}, `--slo: slo "http_p99<1s": col 1: http_p99 is a figure of an HTTP fleet run`},
		{"websocket slo on http", []string{"http", "--clients", "2", "--slo", "r99<1s", web}, `--slo: slo "r99<1s": col 1: r99 is a figure of a WebSocket run`},
		{"negative duration slo", []string{"loadgen", "--url", ws, "--slo", "r99<-5s"}, `--slo: slo "r99<-5s": col 5: r99 is never negative`},
		{"negative count slo", []string{"drill", "--url", ws, "--restart-cmd", "true", "--slo", "stopped<=-1", "--out", out}, `--slo: slo "stopped<=-1": col 10: stopped is never negative`},
		{"count below zero slo", []string{"run", "--slo", "lost<0", "--out", out}, `--slo: slo "lost<0": col 6: lost is never negative: lost<0 cannot pass`},
		{"share above 100%", []string{"loadgen", "--url", ws, "--slo", "recovered_share>=101%"}, `--slo: slo "recovered_share>=101%": col 18: recovered_share is a share from 0 to 1`},
		{"share above all", []string{"loadgen", "--url", ws, "--slo", "recovered_share>100%"}, `--slo: slo "recovered_share>100%": col 17: recovered_share is at most 1`},
		{"recovery slo without chaos", []string{"run", "--slo", "r99<10s", "--out", out}, `--slo: slo "r99<10s": col 1: r99 measures the recovery from a chaos event, and this run has none scheduled`},
		{"simulate recovery slo without chaos", []string{"simulate", "--slo", "recovered_share==100%"}, `--slo: slo "recovered_share==100%": col 1: recovered_share measures the recovery`},
		{"no scheme", []string{"loadgen", "--url", addr}, `--url: "` + addr + `" has no scheme: write ws://` + addr + `/`},
		{"simulate NaN", []string{"simulate", "--accept-rate", "NaN"}, `--accept-rate: invalid value "NaN": want a finite number`},
		{"run Inf", []string{"run", "--accept-rate", "+Inf", "--out", out}, `--accept-rate: invalid value "+Inf": want a finite number`},
		{"loadgen ramp Inf", []string{"loadgen", "--url", ws, "--ramp", "Infinity"}, `--ramp: invalid value "+Inf": want a finite number`},
		{"http rate NaN", []string{"http", "--clients", "2", "--rate", "NaN", web}, `--rate: invalid value "NaN": want a finite number`},
		{"config NaN", []string{"simulate", "--config", nanConfig}, nanConfig + `:1:14: accept-rate: invalid value "NaN": want a finite number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"stampede"}, tc.args...)
			switch tc.args[0] {
			case "loadgen", "run", "drill":
				args = append(args, fleet...)
			case "simulate":
				args = append(args, "--clients", "2", "--duration", "1s")
			}
			var stdout, stderr bytes.Buffer
			code := runApp(args, &stdout, &stderr)
			line := stderr.String()
			if code != 2 || !strings.HasPrefix(line, "stampede: "+tc.want) || strings.Count(line, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line starting %q", code, line, "stampede: "+tc.want)
			}
			if n := accepted.Load(); n != 0 {
				t.Errorf("the server saw %d connection(s); want none before the checks", n)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written; want nothing left", out)
				os.RemoveAll(out)
			}
		})
	}
}

// TestLoadgenAllStopped: against a server that answers every upgrade 404
// every client stops on its first attempt, a class retrying cannot fix:
// loadgen ends then, not at --duration, and exits 1 with one line.
func TestLoadgenAllStopped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/"
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runLoadgen(t, "--url", url, "--clients", "5", "--duration", "60s", "--progress", "0", "--out", dir)
	want := "stampede: unreachable: " + url + ": all 5 clients stopped on handshake_4xx: 404 Not Found, which retrying cannot fix\n"
	if code != 1 || !strings.HasSuffix(stderr, want) || strings.Count(stderr, "stampede: ") != 1 {
		t.Fatalf("exit %d, stderr %q; want 1 and %q\n%s", code, stderr, want, stdout)
	}
	s, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if s.DurationS >= 30 {
		t.Errorf("duration_s %.1f: the run waited out its 60s after every client stopped", s.DurationS)
	}
}
