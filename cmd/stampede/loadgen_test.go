package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

func runLoadgen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "loadgen"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestLoadgenRefused: clients against a closed port give up after their
// attempts and the summary says why; --out writes summary.json. A run in
// which no client connected tested nothing: it fails (exit 1) with one
// line saying so.
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
	wantErr := "stampede: unreachable: ws://" + addr + "/: no client of 4 connected in "
	if code != 1 || !strings.HasPrefix(errOut, wantErr) || !strings.HasSuffix(errOut, "; all 12 attempts ended refused\n") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 1 and one line %q...", code, errOut, wantErr)
	}
	for _, want := range []string{
		"4 clients in 1 loadgen process(es)",
		"connect: 12 attempts, 0 successes, failures: refused 12\n",
		"stopped: 4 client(s) ran out of attempts; the last error: refused: dial tcp " + addr + ": connect: connection refused\n",
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
		{"too many clients", []string{"--clients", "10000000"}, "--clients: 10000000 needs"},
		{"too few procs", []string{"--clients", "40000", "--loadgen-procs", "1"}, "--loadgen-procs: 1 cannot hold 40000 clients"},
		{"ping interval", []string{"--ping-interval", "0"}, "--ping-interval: 0 is no interval"},
		{"pong timeout", []string{"--pong-timeout", "-1s"}, "--pong-timeout: "},
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

// TestLoadgenKernelCounters: a fleet against the bundled target with a
// backlog of 1 that accepts nothing overflows its accept queue. The
// summary's kernel figures are kernel.csv's last row (loadgen once left them
// all zero while the CSV counted thousands), so listen_overflows==0 fails.
// The counters are the namespace's: other programs only add to them. No
// client connects (the target holds every upgrade): the run fails for
// that first, and the SLO's failure is in the summary.
func TestLoadgenKernelCounters(t *testing.T) {
	srv, err := target.Start(target.Config{Server: spec.Server{Backlog: 1, Hold: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	dir := t.TempDir()
	// 20 SYNs on a queue of 2: the rest are dropped, and dropped again at
	// each retransmit (about 1 s later on this kernel).
	code, out, errOut := runLoadgen(t, "--url", srv.URL(), "--clients", "20", "--duration", "1500ms",
		"--policy", "fixed:initial=100ms", "--progress", "0", "--out", dir, "--slo", "listen_overflows==0")
	if code != 1 || !strings.Contains(errOut, "unreachable: ") || !strings.Contains(out, "SLO listen_overflows==0: FAIL") {
		t.Errorf("exit %d, stderr %q; want 1, the fleet unreachable and the failed SLO in:\n%s", code, errOut, out)
	}
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, results.KernelFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 || rows[0][1] != "ListenOverflows" {
		t.Fatalf("kernel.csv: %v, %v", rows, err)
	}
	last := rows[len(rows)-1][1]
	if got := strconv.FormatInt(sum.Kernel.ListenOverflows, 10); got != last || sum.Kernel.ListenOverflows <= 0 {
		t.Errorf("summary ListenOverflows %s, kernel.csv's last row %s; want equal and above 0", got, last)
	}
	if want := fmt.Sprintf("kernel: ListenOverflows %d,", sum.Kernel.ListenOverflows); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// TestLoadgenServerNeverBack: the server dies mid-run and never comes
// back. The detected outage has no ready time; its refusals are outage
// attempts, none is wasted; an R gate fails saying recovery never
// happened (the outage was once ready at its own start, and every refusal
// a wasted herd attempt).
func TestLoadgenServerNeverBack(t *testing.T) {
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Killed once the whole fleet is connected (whenever that is on a
	// loaded machine), never to come back.
	stop := make(chan struct{})
	go func() {
		for srv.Stats().Conns < 10 {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		// The server counts a connection when its side of the handshake
		// is done; the client counts it once it has read the 101. Give the
		// clients that moment, or some are not yet connected at the outage.
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		srv.Shutdown(target.Abrupt)
	}()
	t.Cleanup(func() { close(stop); srv.Shutdown(target.Abrupt) })
	dir := t.TempDir()
	code, out, errOut := runLoadgen(t, "--url", srv.URL(), "--clients", "10", "--duration", "4s",
		"--policy", "fixed:initial=100ms", "--progress", "0", "--out", dir, "--slo", "r99<10s")
	if code != 1 || !strings.Contains(errOut, "1 of 1 SLO(s) failed: r99<10s") {
		t.Errorf("exit %d, stderr %q; want 1 and the failed SLO", code, errOut)
	}
	if want := "SLO r99<10s: FAIL (r99 = null: recovery never happened: the target was not ready again after event 0 (outage (detected) at "; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Events []struct {
			Kind   string   `json:"kind"`
			ReadyS *float64 `json:"ready_s"`
		} `json:"events"`
		Recovery []struct {
			ConnectedBefore int      `json:"connected_before"`
			OutageAttempts  *uint64  `json:"outage_attempts"`
			WastedAttempts  *uint64  `json:"wasted_attempts"`
			R99S            *float64 `json:"r99_s"`
		} `json:"recovery"`
	}
	if err := json.Unmarshal(b, &s); err != nil || len(s.Events) != 1 || len(s.Recovery) != 1 {
		t.Fatalf("summary.json: %+v, %v; want one event", s, err)
	}
	e, r := s.Events[0], s.Recovery[0]
	if e.Kind != "outage" || e.ReadyS != nil {
		t.Errorf("event %+v; want an outage with ready_s null", e)
	}
	if r.ConnectedBefore != 10 || r.OutageAttempts == nil || *r.OutageAttempts == 0 || r.WastedAttempts != nil || r.R99S != nil {
		t.Errorf("recovery %+v; want 10 connected before, outage attempts > 0, wasted and r99 null", r)
	}
}

// TestLoadgenGatesOnNothing: a gate on a figure nobody measured fails
// (exit 1) with a line saying why, where it used to pass on a 0: no
// connect ever succeeded, so connect_p99 is null; the fleet spoke no
// message protocol, so lost is null (docs/results.md "SLO gates").
func TestLoadgenGatesOnNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, out, errOut := runLoadgen(t, "--url", "ws://"+addr+"/", "--clients", "3", "--duration", "300ms",
		"--policy", "fixed:initial=20ms", "--progress", "0", "--slo", "connect_p99<1s", "--slo", "lost==0")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"SLO connect_p99<1s: FAIL (connect_p99 = null: not measured: no connect latency was recorded)\n",
		"SLO lost==0: FAIL (lost = null: not measured: the run did not speak the message protocol",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPingIntervalFlag: a negative --ping-interval turns the keepalive
// off, as a negative Client.PingInterval does, and 0 is refused (it used
// to mean off); the fleet's default by its size is the spec's; the config
// a run records gives the interval the fleet used.
func TestPingIntervalFlag(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		ping, pong time.Duration
		recorded   string
	}{
		{nil, spec.DefaultPingInterval, 0, "10s"},
		{[]string{"--ping-interval", "-1s"}, -time.Second, 0, "-1s"},
		// Unset, a large fleet pings at most 10,000 times a second.
		{[]string{"--clients", "1000000"}, 100 * time.Second, 0, "100s"},
		{[]string{"--clients", "250000"}, 25 * time.Second, 0, "25s"},
		{[]string{"--clients", "1000000", "--ping-interval", "10s"}, 10 * time.Second, 0, "10s"},
		{[]string{"--ping-interval", "2s", "--pong-timeout", "500ms"}, 2 * time.Second, 500 * time.Millisecond, "2s"},
	} {
		var got loadgen.Config
		var recorded any
		cmd := &cli.Command{Name: "loadgen", Flags: fleetFlags(fleetDefaults{policy: defaultLoadgenPolicy}), Action: func(c *cli.Context) error {
			var err error
			got, err = fleetConfig(c)
			for _, kv := range fleetSettings(c, got) {
				if kv.name == "ping-interval" {
					recorded = kv.value
				}
			}
			return err
		}}
		app := &cli.App{Commands: []*cli.Command{cmd}}
		if err := app.Run(append([]string{"stampede", "loadgen"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		got.Client = got.Client.WithDefaults()
		if tc.pong == 0 && tc.ping > 0 {
			tc.pong = tc.ping // the spec's default pong timeout
		}
		if got.PingInterval != tc.ping || got.PongTimeout != tc.pong {
			t.Errorf("%q: ping %s pong %s, want %s %s", tc.args, got.PingInterval, got.PongTimeout, tc.ping, tc.pong)
		}
		if recorded != tc.recorded {
			t.Errorf("%q: config records ping-interval %v, want %s", tc.args, recorded, tc.recorded)
		}
	}
	cmd := &cli.Command{Name: "loadgen", Flags: fleetFlags(fleetDefaults{policy: defaultLoadgenPolicy}), Action: func(c *cli.Context) error {
		_, err := fleetConfig(c)
		return err
	}}
	err := (&cli.App{Commands: []*cli.Command{cmd}}).Run([]string{"stampede", "loadgen", "--ping-interval", "0"})
	if err == nil || !strings.Contains(err.Error(), "-1s to turn the keepalive off") {
		t.Errorf("--ping-interval 0: %v, want a refusal naming -1s", err)
	}
}
