// Package otelcol tests stampede's OTLP export against a real
// OpenTelemetry Collector, built here from the collector's own modules
// (cmd/otelcol-stampede: the OTLP receiver and the file exporter). It is a
// module of its own so that the product's go.mod never requires the
// collector; `make test` runs it (Makefile MODULES).
package otelcol

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// secret is an --otlp-header value: it must reach no output, results
// file or process command line.
const secret = "0tlpS3cr3t"

// metricUnits is every metric stampede exports over OTLP, with its unit:
// docs/metrics.md "OpenTelemetry" (metrics.Names in the product).
var metricUnits = map[string]string{
	"stampede.run.elapsed":               "s",
	"stampede.fleet.size":                "{client}",
	"stampede.connections.active":        "{connection}",
	"stampede.connect.inflight":          "{attempt}",
	"stampede.connect.attempts":          "{attempt}",
	"stampede.connect.successes":         "{attempt}",
	"stampede.connect.failures":          "{attempt}",
	"stampede.disconnects":               "{connection}",
	"stampede.clients.stopped":           "{client}",
	"stampede.messages.sent":             "{message}",
	"stampede.messages.acked":            "{message}",
	"stampede.messages.delivered":        "{message}",
	"stampede.herd.attempts":             "{attempt}",
	"stampede.chaos.active":              "1",
	"stampede.recovery.r50":              "s",
	"stampede.recovery.r90":              "s",
	"stampede.recovery.r99":              "s",
	"stampede.recovery.r100":             "s",
	"stampede.recovery.herd_peak":        "{attempt}",
	"process.memory.usage":               "By",
	"process.cpu.time":                   "s",
	"process.unix.file_descriptor.count": "{file_descriptor}",
	"stampede.processes":                 "{process}",
}

// counters are the cumulative, monotonic sums; the rest are gauges.
var counters = []string{"stampede.connect.attempts", "stampede.connect.successes", "stampede.connect.failures",
	"stampede.disconnects", "stampede.messages.sent", "stampede.messages.acked", "stampede.messages.delivered",
	"process.cpu.time"}

// TestOTLPToCollector runs a real `stampede run` (100 clients, 6 s, one
// abrupt restart) with --otlp-endpoint, once over OTLP/HTTP and once over
// OTLP/gRPC, into a real collector whose file exporter writes what it
// receives; every metric must arrive, with OpenTelemetry's units and the
// run's resource attributes, and the final values must be summary.json's.
func TestOTLPToCollector(t *testing.T) {
	if testing.Short() && os.Getenv("STAMPEDE_REQUIRE_SERVICES") != "1" {
		t.Skip("builds an OpenTelemetry Collector and stampede, and runs stampede twice (-short skips)")
	}
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	col := filepath.Join(dir, "otelcol-stampede")
	began := time.Now()
	run(t, ".", "go", "build", "-o", col, "./cmd/otelcol-stampede")
	t.Logf("collector built in %s", time.Since(began).Round(time.Second))
	bin := filepath.Join(dir, "bin")
	run(t, root, "make", "-s", "release", "RELEASE_DIR="+bin)
	exe := filepath.Join(bin, "stampede")

	for _, tc := range []struct{ name, scheme string }{{"http", "http"}, {"grpc", "grpc"}} {
		t.Run(tc.name, func(t *testing.T) { checkExport(t, col, exe, tc.scheme) })
	}
}

// checkExport starts the collector, runs stampede into it over scheme
// (http or grpc) and checks what the file exporter wrote.
func checkExport(t *testing.T, col, exe, scheme string) {
	dir := t.TempDir()
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	out := filepath.Join(dir, "otlp.jsonl")
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [file]
`, grpcAddr, httpAddr, out)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var colLog bytes.Buffer
	cc := exec.CommandContext(ctx, col, "--config", "file:"+cfgPath)
	cc.Stdout, cc.Stderr = &colLog, &colLog
	if err := cc.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cc.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cc.Process.Kill(); <-exited })
	endpoint := "http://" + httpAddr
	waitListening(t, ctx, exited, httpAddr, &colLog)
	waitListening(t, ctx, exited, grpcAddr, &colLog)
	if scheme == "grpc" {
		endpoint = "grpc://" + grpcAddr
	}

	results := filepath.Join(dir, "results")
	sc := exec.CommandContext(ctx, exe, "run", "--clients", "100", "--duration", "6s",
		"--chaos", "at 1s restart abrupt down=1s", "--quiet", "--out", results,
		"--otlp-endpoint", endpoint, "--otlp-interval", "500ms", "--otlp-header", "X-Api-Key="+secret)
	var stampedeOut bytes.Buffer
	sc.Stdout, sc.Stderr = &stampedeOut, &stampedeOut
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	checkArgv(t, sc.Process.Pid)
	if err := sc.Wait(); err != nil {
		t.Fatalf("stampede run: %v\n%s\ncollector:\n%s", err, stampedeOut.String(), colLog.String())
	}
	if strings.Contains(stampedeOut.String(), secret) {
		t.Errorf("the --otlp-header value is in stampede's output:\n%s", stampedeOut.String())
	}
	checkNoSecret(t, results)

	sum := readSummary(t, results)
	got := waitFinal(t, ctx, out, sum.RunID, &colLog)
	checkResource(t, got.resource, sum.RunID)
	checkNames(t, got)
	checkFinal(t, got, sum)
}

// run runs a command in dir and fails the test with its output if it
// fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening waits for the collector to listen on addr; it fails at
// once when the collector has exited.
func waitListening(t *testing.T, ctx context.Context, exited <-chan struct{}, addr string, log *bytes.Buffer) {
	t.Helper()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("the collector exited:\n%s", log.String())
		case <-ctx.Done():
			t.Fatalf("the collector never listened on %s:\n%s", addr, log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkArgv reads the command lines of stampede and of its children while
// the run goes: stampede blanks the --otlp-header value from its own in
// its first moments (docs/secrets.md), and no child may ever show it.
func checkArgv(t *testing.T, pid int) {
	t.Helper()
	shows := func(p int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		return err == nil && bytes.Contains(b, []byte(secret))
	}
	hidden := time.Now().Add(10 * time.Second)
	for shows(pid) {
		if time.Now().After(hidden) {
			t.Errorf("stampede's command line still shows the --otlp-header value after 10 s")
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	deadline := time.Now().Add(2 * time.Second)
	children := 0
	for time.Now().Before(deadline) {
		kids := childrenOf(pid)
		children = max(children, len(kids))
		for _, p := range append(kids, pid) {
			if shows(p) {
				t.Errorf("process %d's command line shows the --otlp-header value", p)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if children == 0 {
		t.Log("no child process seen while checking command lines")
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func checkNoSecret(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the --otlp-header value", filepath.Base(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
