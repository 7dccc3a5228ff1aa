package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/metrics/metricstest"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/storm"
)

// TestOutUnwritable: a results folder that cannot be made fails run, bench
// and loadgen at once, in one line with exit status 2, before any process
// starts or socket opens (it failed after the whole run, while stdout
// already said "results: /proc/nope").
func TestOutUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The loadgen's server: no fleet may connect to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := "ws://" + ln.Addr().String() + "/"
	for _, out := range []string{"/proc/nope", filepath.Join(file, "sub")} {
		for _, args := range [][]string{
			{"run", "--clients", "10", "--duration", "2s"},
			{"bench", "--clients", "10", "--duration", "2s"},
			{"loadgen", "--url", url, "--clients", "10", "--duration", "2s"},
		} {
			t.Run(args[0]+" "+out, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := runApp(append(append([]string{"stampede"}, args...), "--out", out), &stdout, &stderr)
				if code != 2 || !strings.HasPrefix(stderr.String(), "stampede: --out: ") || strings.Count(stderr.String(), "\n") != 1 {
					t.Errorf("exit %d, stderr %q; want 2 and one line starting \"stampede: --out: \"", code, stderr.String())
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout %q: nothing should have run", stdout.String())
				}
			})
		}
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("the loadgen connected to its server before failing on --out")
	}
}

// TestOutCheckLeavesNothing: checking --out creates no folder that a
// command failing on another flag leaves behind.
func TestOutCheckLeavesNothing(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "a", "b", "c")
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", "run", "--backlog", "-1", "--out", out}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, stderr %q; want 2", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(base, "a")); !os.IsNotExist(err) {
		t.Errorf("%s/a: %v; want no such folder", base, err)
	}
	if err := folder.CheckFolder(out, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "a")); !os.IsNotExist(err) {
		t.Errorf("folder.CheckFolder left %s/a behind: %v", base, err)
	}
}

// TestFleetFlagsShared: run, bench and loadgen take the same fleet flags
// from one definition, --quiet included (README promised it on loadgen,
// which had none).
func TestFleetFlagsShared(t *testing.T) {
	want := fleetFlags(fleetDefaults{})
	for _, name := range []string{"run", "bench", "loadgen"} {
		var cmd = flagsOf(name)
		for _, f := range want {
			n := f.Names()[0]
			if n == "policy" && name == "bench" {
				n = "policies" // a bench compares several
			}
			if flagNamed(cmd, n) == nil {
				t.Errorf("%s has no --%s", name, n)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", "loadgen", "--url", "ws://127.0.0.1:1/", "--quiet", "--duration", "0s"}, &stdout, &stderr); code != 2 ||
		stderr.String() != "stampede: --duration: must be positive, got 0s\n" {
		t.Errorf("loadgen --quiet: exit %d, stderr %q", code, stderr.String())
	}
}

// TestHelpAgrees: no flag shows two defaults (`(default 10000; needs
// --store) (default: 0)`); every command gives the connections one
// process holds as one figure, the one runs are sized by (the target said
// about 19,000, the rest 15,000).
func TestHelpAgrees(t *testing.T) {
	perProc := thousands(storm.PerProcess)
	conns := regexp.MustCompile(`(\d{1,3}(?:,\d{3})+) connections`)
	for _, c := range newApp(io.Discard, io.Discard).Commands {
		if c.Hidden {
			continue
		}
		var stdout, stderr bytes.Buffer
		if code := runApp([]string{"stampede", c.Name, "--help"}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", c.Name, code, stderr.String())
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.Count(strings.ToLower(line), "default") > 1 {
				t.Errorf("%s --help: two defaults: %s", c.Name, strings.TrimSpace(line))
			}
			if c.Name == "proxy" { // relays: two files per connection
				continue
			}
			for _, m := range conns.FindAllStringSubmatch(line, -1) {
				if m[1] != perProc {
					t.Errorf("%s --help: %s connections, want %s: %s", c.Name, m[1], perProc, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestLoadgenPushgateway: a loadgen run with --pushgateway, against a
// target that restarts, leaves its final recovery figures on a real
// Pushgateway after it ends, grouped by the run's id.
func TestLoadgenPushgateway(t *testing.T) {
	gw := metricstest.Pushgateway(t)
	addr, restarted := restartingTarget(t, 40)
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errOut := runLoadgen(t, "--url", "ws://"+addr+"/", "--clients", "40", "--duration", "3s", "--loadgen-procs", "1",
		"--policy", "fixed:initial=100ms,jitter=0.5", "--quiet", "--out", dir, "--pushgateway", gw)
	if err := <-restarted; err != nil {
		t.Fatalf("restarting the target: %v", err)
	}
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Recovery) == 0 || sum.Recovery[0].R99S == nil {
		t.Fatalf("the run saw no recovery: %+v", sum.Recovery)
	}
	got := metricstest.Samples(t, gw+"/metrics", "stampede_")
	want := fmt.Sprint(*sum.Recovery[0].R99S)
	if v := metricstest.Value(got, "stampede_recovery_r99_seconds", `job="stampede"`, `run_id="`+sum.RunID+`"`, `event="0"`); v != want {
		t.Errorf("pushed r99 = %q, want %s (summary.json); pushed:\n%v", v, want, got)
	}
}

// TestLoadgenMetricsLinger: with --metrics-linger the /metrics endpoint
// stays up after the run, serving the summary's recovery figures (it
// closed as the run ended, so no scrape saw them).
func TestLoadgenMetricsLinger(t *testing.T) {
	addr, restarted := restartingTarget(t, 40)
	errR, errW := io.Pipe()
	done := make(chan int, 1)
	var stdout bytes.Buffer
	go func() {
		// A long progress interval: the log lines, no progress lines.
		done <- runApp([]string{"stampede", "loadgen", "--url", "ws://" + addr + "/", "--clients", "40", "--duration", "3s",
			"--loadgen-procs", "1", "--policy", "fixed:initial=100ms,jitter=0.5", "--progress", "1h",
			"--metrics-addr", "127.0.0.1:0", "--metrics-linger", "2s"}, &stdout, errW)
		errW.Close()
	}()
	var url, lingering string
	var log []string
	sc := bufio.NewScanner(errR)
	for sc.Scan() {
		log = append(log, sc.Text())
		if u, ok := strings.CutPrefix(sc.Text(), "metrics: http"); ok && url == "" {
			url = "http" + u
		}
		if strings.HasPrefix(sc.Text(), "metrics: serving the final figures") {
			lingering = url
			break
		}
	}
	if lingering == "" {
		t.Fatalf("no lingering endpoint; stderr:\n%s", strings.Join(log, "\n"))
	}
	r99 := metricstest.Value(metricstest.Samples(t, lingering, "stampede_"),
		"stampede_recovery_r99_seconds", `event="0"`)
	go io.Copy(io.Discard, errR)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, stdout:\n%s", code, stdout.String())
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restarting the target: %v", err)
	}
	if r99 == "" {
		t.Error("the lingering endpoint has no stampede_recovery_r99_seconds")
	}
}

// flagsOf returns the flags of the command named name.
func flagsOf(name string) []cli.Flag {
	for _, c := range commands {
		if c.Name == name {
			return c.Flags
		}
	}
	return nil
}
