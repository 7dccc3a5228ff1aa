package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/internal/netnshost"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

func runDrill(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runApp(append([]string{"stampede", "drill"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// onFile calls fn once the file path exists (a deploy command's `touch`),
// polling until the test ends.
func onFile(t *testing.T, path string, fn func()) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := os.Stat(path); err == nil {
				fn()
				return
			}
		}
	}()
}

// drillSummary is the part of summary.json the drill tests read.
type drillSummary struct {
	Events []struct {
		Kind   string   `json:"kind"`
		Mode   string   `json:"mode"`
		Spec   string   `json:"spec"`
		StartS float64  `json:"start_s"`
		EndS   float64  `json:"end_s"`
		ReadyS *float64 `json:"ready_s"`
		Exit   string   `json:"exit"`
	} `json:"events"`
	Connect struct {
		Successes   uint64            `json:"successes"`
		Failures    map[string]uint64 `json:"failures"`
		Disconnects map[string]uint64 `json:"disconnects"`
	} `json:"connect"`
	Checks      []summary.Check `json:"checks"`
	Pass        bool            `json:"pass"`
	Interrupted bool            `json:"interrupted"`
}

func readDrillSummary(t *testing.T, dir string) drillSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s drillSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// readJUnit parses a JUnit file as CI systems do, with encoding/xml.
func readJUnit(t *testing.T, path string) drill.JUnitSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc drill.JUnitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s does not parse as JUnit XML: %v\n%s", path, err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1:\n%s", len(doc.Suites), b)
	}
	return doc
}

// failedCases names the testcases with a <failure>.
func failedCases(s drill.JUnitSuite) []string {
	var out []string
	for _, c := range s.Cases {
		if c.Failure != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// privateFolder fails the test unless dir is 0700 and each file in it 0600.
func privateFolder(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return err
		}
		fi, _ := d.Info()
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
}

// TestDrillDeploy: the deploy command restarts the server at --at: every
// client is closed with 1012, the load balancer's 503 with Retry-After
// answers the first reconnects (nobody comes back sooner than told), and
// the fleet recovers: exit 0, the deploy event and check in summary.json,
// the classes counted, JUnit with every testcase passed, a private
// folder, never more connections than clients, no load after the end.
func TestDrillDeploy(t *testing.T) {
	const clients = 20
	srv := newDrillServer(t)
	dir, junit := t.TempDir(), filepath.Join(t.TempDir(), "drill.xml")
	out := filepath.Join(dir, "out")
	trigger := filepath.Join(dir, "deployed")
	onFile(t, trigger, func() { srv.restart(1012, time.Second, "1") })
	code, stdout, stderr := runDrill(t, "--url", srv.url, "--clients", itoa(clients), "--duration", "5s",
		"--policy", "exp:initial=200ms,max=2s,jitter=0.5", "--restart-cmd", "echo deploying; touch "+trigger+"; sleep 0.3; echo done",
		"--at", "1s", "--slo", "recovered_share==100%", "--slo", "connect_p99<5s", "--junit", junit, "--out", out, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	end := time.Now()
	for _, want := range []string{"drill: target " + srv.url, "drill: " + itoa(clients) + " clients, first connects all at once", "drill: caps: at most 20 connections", "deploy: deploying", "deploy: done"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	s := readDrillSummary(t, out)
	var deploys int
	for _, e := range s.Events {
		if e.Kind == "deploy" {
			deploys++
			if e.Exit != "exit status 0" || e.StartS < 1 || e.EndS < e.StartS+0.3 || e.ReadyS == nil || *e.ReadyS != e.EndS {
				t.Errorf("deploy event %+v; want exit 0 from >= 1s for >= 0.3s, ready at its end", e)
			}
		}
	}
	if deploys != 1 {
		t.Errorf("%d deploy events, want 1: %+v", deploys, s.Events)
	}
	if n := s.Connect.Disconnects["closed_1012"]; n != clients {
		t.Errorf("closed_1012 %d, want %d: %v", n, clients, s.Connect.Disconnects)
	}
	if n := s.Connect.Failures["http_503"]; n == 0 {
		t.Errorf("no http_503 failures: %v", s.Connect.Failures)
	}
	if len(s.Checks) != 1 || s.Checks[0].Name != "deploy" || !s.Checks[0].Pass || !s.Pass {
		t.Errorf("checks %+v pass %v; want the deploy check passed", s.Checks, s.Pass)
	}
	peak, early, accepted, last := srv.stats()
	if early != 0 {
		t.Errorf("%d upgrades came sooner than Retry-After", early)
	}
	if peak > clients {
		t.Errorf("%d connections open at once; the cap is %d", peak, clients)
	}
	time.Sleep(300 * time.Millisecond)
	if _, _, n, l := srv.stats(); n != accepted || l.After(end) || last.After(end) {
		t.Errorf("connections accepted after the drill returned: %d then %d", accepted, n)
	}
	doc := readJUnit(t, junit)
	if st := doc.Suites[0]; st.Tests != 3 || st.Failures != 0 || len(failedCases(st)) != 0 || len(st.Cases) != 3 {
		t.Errorf("junit: %d tests %d failures %v; want 3 passed (2 SLOs, the deploy)", st.Tests, st.Failures, failedCases(st))
	}
	privateFolder(t, out)
	// The report shows the deploy's span on the timeline, what the
	// clients saw, and the check.
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"deploy command","start":`, `<code>deploy</code>`, "closed_1012", "http_503"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, drill.DeployLogFile)); err != nil || !strings.Contains(string(b), "deploying\ndone\n") {
		t.Errorf("deploy.log: %q, %v", b, err)
	}
}

// TestDrillFailingCommand: a deploy command that exits non-zero fails the
// drill (exit 1) although every SLO held, and the JUnit file marks the
// deploy testcase, and only it, failed.
func TestDrillFailingCommand(t *testing.T) {
	srv := newDrillServer(t)
	out, junit := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "drill.xml")
	code, stdout, stderr := runDrill(t, "--url", srv.url, "--clients", "5", "--duration", "2s",
		"--restart-cmd", "echo broken >&2; exit 3", "--at", "500ms", "--slo", "connect_p99<5s",
		"--junit", junit, "--out", out, "--progress", "0")
	if code != 1 || !strings.Contains(stderr, "stampede: 1 of 2 gate(s) failed: deploy\n") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 1 and the deploy gate failed", code, stderr)
	}
	if !strings.Contains(stdout, "check deploy: FAIL (`echo broken >&2; exit 3`: exit status 3") {
		t.Errorf("stdout lacks the failed check:\n%s", stdout)
	}
	doc := readJUnit(t, junit)
	st := doc.Suites[0]
	if f := failedCases(st); st.Tests != 2 || st.Failures != 1 || len(f) != 1 || f[0] != "deploy" {
		t.Errorf("junit: %d tests, %d failures %v; want 2 with deploy failed", st.Tests, st.Failures, f)
	}
	if b, err := os.ReadFile(filepath.Join(out, drill.DeployLogFile)); err != nil || !strings.Contains(string(b), "broken\n") || !strings.Contains(string(b), "exit status 3") {
		t.Errorf("deploy.log: %q, %v", b, err)
	}
}

// TestDrillNeverConnected: a drill whose fleet never connected tested
// nothing: it fails (exit 1, one line) though its deploy and its SLO
// held, and its summary and JUnit file say so.
func TestDrillNeverConnected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out, junit := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "drill.xml")
	code, stdout, stderr := runDrill(t, "--url", "ws://"+addr+"/", "--clients", "5", "--duration", "2s",
		"--restart-cmd", "true", "--at", "500ms", "--slo", "stopped==0",
		"--junit", junit, "--out", out, "--progress", "0")
	if code != 1 || !strings.Contains(stderr, "stampede: unreachable: ws://"+addr+"/: no client of 5 connected") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 1 and the fleet unreachable\n%s", code, stderr, stdout)
	}
	if s := readDrillSummary(t, out); s.Pass || len(s.Checks) == 0 || s.Checks[len(s.Checks)-1].Name != "fleet" {
		t.Errorf("summary: pass %v, checks %+v; want the fleet check failed", s.Pass, s.Checks)
	}
	if f := failedCases(readJUnit(t, junit).Suites[0]); !slices.Contains(f, "fleet") {
		t.Errorf("junit failures %v; want fleet among them", f)
	}
}

// TestDrillBadInput: a drill needs a deploy, one way or the other, and
// names the flag at fault in one line.
func TestDrillBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no deploy", []string{"--url", "ws://127.0.0.1:1/"}, "stampede: --restart-cmd or --wait-for-outage: one is required"},
		{"both", []string{"--url", "ws://127.0.0.1:1/", "--restart-cmd", "true", "--wait-for-outage"}, "stampede: --restart-cmd and --wait-for-outage: give one"},
		{"at past the end", []string{"--url", "ws://127.0.0.1:1/", "--restart-cmd", "true", "--at", "40s"}, "stampede: --at: 40s must fall inside --duration 30s"},
		{"ca on ws", []string{"--url", "ws://127.0.0.1:1/", "--wait-for-outage", "--ca", "x.pem"}, "stampede: --ca: a CA, client certificate or server name needs a wss:// URL"},
		{"missing ca", []string{"--url", "wss://127.0.0.1:1/", "--wait-for-outage", "--ca", "/nonexistent/ca.pem"}, "stampede: --ca: open /nonexistent/ca.pem"},
		{"a header as a secret header's name", []string{"--url", "ws://127.0.0.1:1/", "--wait-for-outage", "--secret-header", "Authorization: Bearer x"},
			"stampede: --secret-header: \"Authorization: ...\" is a header and its value; it takes a header name only (to send the header: --header 'Authorization: value')"},
		{"min-connected above 100%", []string{"--url", "ws://127.0.0.1:1/", "--wait-for-outage", "--min-connected", "120%"}, "stampede: --min-connected: invalid value \"120%\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runDrill(t, append(tc.args, "--out", filepath.Join(t.TempDir(), "out"))...)
			if code != 2 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line %q...", code, stdout, stderr, tc.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDrillWaitForOutage: no command; the server restarts by itself (a
// deploy by hand) and the clients' side detects the outage: the "outage"
// check passes. A run in which nothing happened fails it.
func TestDrillWaitForOutage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
		code    int
	}{
		{"deployed by hand", true, 0},
		{"nothing happened", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newDrillServer(t)
			if tc.restart {
				// Once the fleet is up, as an operator's deploy would come.
				stop := make(chan struct{})
				t.Cleanup(func() { close(stop) })
				go func() {
					for peak, _, _, _ := srv.stats(); peak < 10; peak, _, _, _ = srv.stats() {
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
					time.Sleep(300 * time.Millisecond)
					srv.restart(1012, 500*time.Millisecond, "1")
				}()
			}
			out, junit := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "drill.xml")
			code, stdout, stderr := runDrill(t, "--url", srv.url, "--clients", "10", "--duration", "4s", "--wait-for-outage",
				"--policy", "exp:initial=200ms,max=1s,jitter=0.5", "--junit", junit, "--out", out, "--progress", "0")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stderr, "drill: waiting for an outage") {
				t.Errorf("no banner line for the wait:\n%s", stderr)
			}
			s := readDrillSummary(t, out)
			if len(s.Checks) != 1 || s.Checks[0].Name != "outage" || s.Checks[0].Pass != tc.restart {
				t.Errorf("checks %+v; want outage pass=%v", s.Checks, tc.restart)
			}
			st := readJUnit(t, junit).Suites[0]
			if f := failedCases(st); st.Tests != 1 || (len(f) == 1) == tc.restart {
				t.Errorf("junit: %d tests, failed %v", st.Tests, f)
			}
		})
	}
}

// TestDrillAllowRemote: a server on a network-namespace host of
// scripts/hosts.sh (another host, on a bridge of this machine) is refused
// until --allow-remote names its address, and then drilled.
func TestDrillAllowRemote(t *testing.T) {
	set := netnshost.Up(t, 1)
	h := set.Hosts[0]
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(h.Addr, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := serveDrill(t, ln)
	args := []string{"--url", srv.url, "--clients", "5", "--duration", "2s", "--restart-cmd", "true", "--at", "100ms",
		"--slo", "failures==0", "--progress", "0"}
	code, _, stderr := runDrill(t, append(args, "--out", filepath.Join(t.TempDir(), "out"))...)
	if want := "host " + h.Addr.String() + " is not loopback"; code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("without --allow-remote: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	if _, _, n, _ := srv.stats(); n != 0 {
		t.Fatalf("%d connections before --allow-remote", n)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runDrill(t, append(args, "--allow-remote", h.Addr.String(), "--out", out)...)
	if code != 0 {
		t.Fatalf("with --allow-remote: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if s := readDrillSummary(t, out); s.Connect.Successes != 5 {
		t.Errorf("%d successes, want 5", s.Connect.Successes)
	}
	if _, _, n, _ := srv.stats(); n != 5 {
		t.Errorf("the server on %s accepted %d connections, want 5", h.Name, n)
	}
}

// TestDrillRestartCmdSecrets: a token typed bare in --restart-cmd, and
// echoed by the command itself (curl -v does), is in no line, file,
// JUnit case nor report of the drill: the command is recorded as its
// words, the secret ones hidden, and its output scrubbed.
func TestDrillRestartCmdSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out, junit := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "drill.xml")
	cmd := `echo "> X-Deploy-Token: ` + secret + `"; echo key ` + secret + "x and token " + secret
	_, stdout, stderr := runDrill(t, "--url", "ws://"+addr+"/", "--clients", "3", "--duration", "1500ms",
		"--restart-cmd", cmd, "--at", "200ms", "--junit", junit, "--out", out, "--progress", "0")
	if !strings.Contains(stderr+stdout, "X-Deploy-Token: <redacted>") {
		t.Fatalf("the banner does not show the command's words:\n%s%s", stdout, stderr)
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Errorf("the deploy token is in the output:\n%s%s", stdout, stderr)
	}
	var rep bytes.Buffer
	if code := runApp([]string{"stampede", "report", out}, &rep, &rep); code != 0 {
		t.Fatalf("report: exit %d: %s", code, rep.String())
	}
	checkPrivate(t, out)
	if b, err := os.ReadFile(junit); err != nil || bytes.Contains(b, []byte(secret)) {
		t.Errorf("junit.xml holds the token (%v):\n%s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(out, drill.DeployLogFile)); err != nil || !bytes.Contains(b, []byte("X-Deploy-Token: <redacted>")) {
		t.Errorf("deploy.log: %q, %v; want the command's output, scrubbed", b, err)
	}
}
