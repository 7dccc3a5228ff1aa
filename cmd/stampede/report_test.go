package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/listener"
)

// TestReportRealRun: a real-socket loadgen run against an in-process
// target that dies abruptly and comes back writes every file of the
// results folder; its report.html has its plots and data; the .hlog files
// decode to summary.json's percentiles; --slo passes; stampede report
// renders it again and compares it.
func TestReportRealRun(t *testing.T) {
	addr, restarted := restartingTarget(t, 40)
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errOut := runLoadgen(t, "--url", "ws://"+addr+"/", "--clients", "40", "--duration", "3s", "--loadgen-procs", "1",
		"--policy", "fixed:initial=100ms,jitter=0.5", "--progress", "0", "--out", dir,
		"--slo", "stopped==0", "--slo", "recovered_share>=100%", "--slo", "r100<2s")
	if err := <-restarted; err != nil {
		t.Fatalf("restarting the target: %v", err)
	}
	if code != 0 {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, want := range []string{"SLO stopped==0: pass (stopped = 0)\n", "SLO recovered_share>=100%: pass (recovered_share = 1)\n", "SLO r100<2s: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"summary.json", "timeline.csv", "connect.hlog", "ttr.hlog", "message_rtt.hlog", "resume.hlog",
		"resources.csv", "kernel.csv", "report.html"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// loadgen --help names every file the folder holds.
	var help, discard bytes.Buffer
	runApp([]string{"stampede", "loadgen", "--help"}, &help, &discard)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(help.String(), e.Name()) {
			t.Errorf("loadgen --help does not name %s, which --out wrote", e.Name())
		}
	}
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.SLO) != 3 || !sum.Pass || len(sum.Events) == 0 {
		t.Errorf("summary: slo %+v pass %v events %+v", sum.SLO, sum.Pass, sum.Events)
	}
	// The logs decode to the summary's percentiles.
	for name, want := range map[string]results.Latency{results.ConnectLogFile: sum.LatencyMS.Connect, results.TTRLogFile: sum.LatencyMS.TTR} {
		h, err := folder.ReadHistogramLogFile(filepath.Join(dir, name))
		if err != nil || results.Percentiles(h) != want || want.Count == 0 {
			t.Errorf("%s: %v: %+v, summary %+v", name, err, results.Percentiles(h), want)
		}
	}
	checkPage(t, filepath.Join(dir, "report.html"), 40)

	// Rendered again from the folder alone, and compared with itself.
	os.Remove(filepath.Join(dir, "report.html"))
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", "report", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	checkPage(t, filepath.Join(dir, "report.html"), 40)
	cmp := filepath.Join(t.TempDir(), "cmp.html")
	stdout.Reset()
	if code := runApp([]string{"stampede", "report", "--out", cmp, dir, dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("report A B: exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "run (fixed:initial=100ms,jitter=0.5)  "); n != 2 {
		t.Errorf("comparison table has %d rows:\n%s", n, stdout.String())
	}
	b, _ := os.ReadFile(cmp)
	if !strings.Contains(string(b), `data-chart="cmp-connected"`) {
		t.Error("compare.html has no overlaid curves")
	}
}

// restartingTarget starts an in-process target on a free port that dies
// abruptly 0.3 s after a fleet of clients is connected to it, and comes
// back on the same port 0.4 s after that: the fleet sees one outage. The
// outage waits for the fleet, not for a time from the target's start: a
// loadgen process started on a loaded machine connected its first
// clients after the outage, and saw none. The channel says whether the
// target came back.
func restartingTarget(t *testing.T, clients int) (addr string, restarted <-chan error) {
	t.Helper()
	port, err := listener.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	srv, err := target.Start(target.Config{Server: spec.Server{Addr: addr}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	servers := []*target.Server{srv}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range servers {
			s.Shutdown(target.Abrupt)
		}
	})
	done := make(chan error, 1)
	go func() { // the outage: down 0.3 s after the fleet is up, for 0.4 s
		for deadline := time.Now().Add(30 * time.Second); srv.Stats().Conns < int64(clients); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				done <- fmt.Errorf("%d of %d clients connected within 30 s", srv.Stats().Conns, clients)
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
		srv.Shutdown(target.Abrupt)
		<-srv.Done()
		time.Sleep(400 * time.Millisecond)
		s2, err := target.Start(target.Config{Server: spec.Server{Addr: addr}})
		if err == nil {
			mu.Lock()
			servers = append(servers, s2)
			mu.Unlock()
		}
		done <- err
	}()
	return addr, done
}

// checkPage checks a report.html for its plots and data, and, when
// Chromium is installed, renders it headless with no network.
func checkPage(t *testing.T, path string, clients int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, c := range []string{"connected", "failures", "latency", "rss", "cpu", "fds", "kernel"} {
		if !strings.Contains(page, `data-chart="`+c+`"`) {
			t.Errorf("%s: no %s plot", path, c)
		}
	}
	m := regexp.MustCompile(`const DATA = (\{.*\});</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("%s: no data", path)
	}
	var data struct {
		Runs []struct {
			Connected []float64 `json:"connected"`
			Events    []struct {
				Name string `json:"name"`
			} `json:"events"`
			Latency map[string]json.RawMessage `json:"latency"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil || len(data.Runs) != 1 {
		t.Fatalf("%s: data: %v", path, err)
	}
	r := data.Runs[0]
	peak := 0.0
	for _, v := range r.Connected {
		peak = max(peak, v)
	}
	if int(peak) != clients || len(r.Events) == 0 || r.Latency["connect"] == nil || r.Latency["ttr"] == nil {
		t.Errorf("%s: connected peak %v, events %v, latency %v", path, peak, r.Events, len(r.Latency))
	}
	script, _ := filepath.Abs("../../lab/check-report.sh")
	if _, err := exec.LookPath("chromium"); err != nil {
		if testenv.Required() {
			t.Fatalf("chromium not installed: %s not rendered (STAMPEDE_REQUIRE_SERVICES=1 requires it)", path)
		}
		t.Logf("chromium not installed: %s not rendered", path)
		return
	}
	if out, err := exec.Command("bash", script, path).CombinedOutput(); err != nil {
		t.Errorf("check-report.sh: %v\n%s", err, out)
	}
}

// TestSLOExit: a failed SLO gives exit status 1 and is printed with its
// figure (here beside the unreachable fleet's own line, which a run that
// connected nobody ends with); a bad one is a usage error naming --slo and
// the column.
func TestSLOExit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--url", "ws://" + addr + "/", "--clients", "2", "--duration", "200ms",
		"--policy", "fixed:initial=10ms,attempts=1", "--progress", "0"}
	code, out, errOut := runLoadgen(t, append(args, "--slo", "failures==0", "--slo", "stopped<=2")...)
	if code != 1 || !strings.HasPrefix(errOut, "stampede: unreachable: ws://"+addr+"/: no client of 2 connected") ||
		!strings.Contains(out, "SLO failures==0: FAIL (failures = 4, over by 4)\nSLO stopped<=2: pass (stopped = 2)\n") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	code, _, errOut = runLoadgen(t, append(args, "--slo", "r99<2x")...)
	if code != 2 || !strings.HasPrefix(errOut, `stampede: --slo: slo "r99<2x": col 5: bad duration "2x"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	var stdout, stderr bytes.Buffer
	if code := runApp([]string{"stampede", "report", t.TempDir()}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "summary.json") {
		t.Errorf("report of an empty folder: exit %d, %q", code, stderr.String())
	}
	if code := runApp([]string{"stampede", "report"}, &stdout, &stderr); code != 2 {
		t.Errorf("report without a folder: exit %d", code)
	}
}
