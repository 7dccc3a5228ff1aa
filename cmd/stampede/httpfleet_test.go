package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
)

// TestHTTPFleetClosedPort is the HTTP fleet's closed-port case: a fleet
// against a closed loopback port ends with every request refused, and
// --slo goodput>0 exits 1; the results folder holds the summary's http
// object, the timeline and the hlogs.
func TestHTTPFleetClosedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ln.Close()
	out := t.TempDir()
	code, _, stderr := runHTTP(t, "--clients", "4", "--rate", "20", "--duration", "300ms", "--attempts", "1",
		"--out", out, "--slo", "goodput>0", url)
	if code != 1 || len(lines(stderr)) != 1 || !strings.Contains(stderr, "goodput>0") {
		t.Errorf("exit %d, stderr %q; want 1 and one line naming the SLO", code, stderr)
	}
	sum, err := folder.ReadSummary(filepath.Join(out, folder.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	h := sum.HTTP
	if h == nil || h.Requests == 0 || h.Outcomes["refused"] != h.Requests || sum.Pass {
		t.Fatalf("summary http %+v, pass %v; want every request refused and the SLO failed", h, sum.Pass)
	}
	for _, f := range []string{results.HTTPTimelineFile, results.HTTPLatencyLogFile, results.HTTPAttemptLogFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// Without an SLO, the unreachable URL is one line.
	code, _, stderr = runHTTP(t, "--clients", "2", "--rate", "10", "--duration", "200ms", "--attempts", "1", url)
	if code != 1 || len(lines(stderr)) != 1 || !strings.Contains(stderr, "unreachable") {
		t.Errorf("exit %d, stderr %q; want 1 and one line saying unreachable", code, stderr)
	}
}

// TestHTTPFleetFlags: each bad flag gives one line naming it.
func TestHTTPFleetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "0", "http://127.0.0.1:1/"}, "--clients:"},
		{[]string{"--clients", "2", "--rate", "-1", "http://127.0.0.1:1/"}, "--rate:"},
		{[]string{"--clients", "2", "--rate", "x", "http://127.0.0.1:1/"}, "--rate:"},
		{[]string{"--rate", "5", "http://127.0.0.1:1/"}, "--rate:"},
		{[]string{"--clients", "2", "--idempotency-key", "k1", "http://127.0.0.1:1/"}, "--idempotency-key:"},
		{[]string{"--clients", "2", "--attempts", "0", "http://127.0.0.1:1/"}, "--attempts:"},
		{[]string{"--clients", "2", "--policies", "nope", "http://127.0.0.1:1/"}, "--policies:"},
		{[]string{"--clients", "2", "--slo", "goodput<", "http://127.0.0.1:1/"}, "--slo:"},
		{[]string{"--clients", "2", "ftp://127.0.0.1/"}, "bad URL"},
		{[]string{"--live", "http://127.0.0.1:1/"}, "--live: only with --clients"},
		{[]string{"--clients", "2", "--live", "--policies", "exp,fixed:delay=1s", "http://127.0.0.1:1/"}, "--live and --policies"},
		{[]string{"--clients", "2", "--live-addr", "0.0.0.0:0", "http://127.0.0.1:1/"}, "--live-addr"},
	} {
		code, _, stderr := runHTTP(t, tc.args...)
		if code == 0 || len(lines(stderr)) != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestHTTPFleetPolicies runs --policies against a loopback server that
// answers 429 with Retry-After: 1 to every third request and prints one
// row per policy.
func TestHTTPFleetPolicies(t *testing.T) {
	_, url := newRecorder(t, func(n int, w http.ResponseWriter) {
		if n%3 == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	})
	code, stdout, _ := runHTTP(t, "--clients", "5", "--rate", "20", "--duration", "300ms",
		"--policies", "fixed:initial=50ms,exp:initial=50ms,max=1s", url)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	l := lines(stdout)
	if len(l) != 3 || !strings.HasPrefix(l[1], "fixed:initial=50ms ") || !strings.HasPrefix(l[2], "exp:initial=50ms,max=1s ") {
		t.Errorf("table:\n%s\nwant a header and one row per policy", stdout)
	}
}

// TestHTTPFleetLive: --live on a fleet prints the page's URL, token
// included, once on stderr at the start, and the folder it becomes
// holds report.html (httpfleet's TestLivePage reads the page's stream).
func TestHTTPFleetLive(t *testing.T) {
	_, url := newRecorder(t, func(int, http.ResponseWriter) {})
	out := t.TempDir()
	code, stdout, stderr := runHTTP(t, "--clients", "2", "--rate", "20", "--duration", "300ms", "--live", "--out", out, "--force", url)
	if code != 0 || !regexp.MustCompile(`^live: http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64} `).MatchString(stderr) || strings.Count(stderr, "token=") != 1 {
		t.Errorf("exit %d, stderr %q: want 0 and the page's URL with its token once", code, stderr)
	}
	if strings.Contains(stdout, "token=") {
		t.Error("the token is on stdout")
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	}
}
