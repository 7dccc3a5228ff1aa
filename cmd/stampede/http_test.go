package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// runHTTP runs `stampede http ARGS...` in-process and returns its exit
// status and what it wrote to stdout and stderr.
func runHTTP(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runApp(append([]string{"stampede", "http"}, args...), &out, &errOut)
	t.Logf("stampede http %s -> %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// recorder is a loopback server answering its n-th request (from 1) with
// answer, and remembering when each request arrived and what it carried.
type recorder struct {
	mu       sync.Mutex
	arrivals []time.Time
	bodies   []string
	headers  []http.Header
}

func newRecorder(t *testing.T, answer func(n int, w http.ResponseWriter)) (*recorder, string) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.arrivals = append(rec.arrivals, time.Now())
		rec.bodies = append(rec.bodies, string(body))
		rec.headers = append(rec.headers, r.Header.Clone())
		n := len(rec.arrivals)
		rec.mu.Unlock()
		answer(n, w)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func (r *recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrivals)
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestHTTPRetryAfterDate is the acceptance test of `stampede http`, on the
// real clock: a 503 whose Retry-After is an HTTP-date at least 2 s ahead,
// then a 200. The second request must not arrive before the date the
// server named, the command succeeds on attempt 2, and its output says the
// wait came from Retry-After.
func TestHTTPRetryAfterDate(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2-3 s on the real clock")
	}
	var mu sync.Mutex
	var sentAt, retryAt time.Time
	rec, url := newRecorder(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			mu.Lock()
			sentAt = time.Now()
			// HTTP-dates have whole seconds: round up so the date is >= 2 s ahead.
			retryAt = sentAt.Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
			w.Header().Set("Retry-After", retryAt.UTC().Format(http.TimeFormat))
			mu.Unlock()
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	})
	code, stdout, stderr := runHTTP(t, url)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if rec.Requests() != 2 {
		t.Fatalf("server saw %d requests; want 2", rec.Requests())
	}
	mu.Lock()
	second := rec.arrivals[1]
	mu.Unlock()
	if second.Before(retryAt) || second.Sub(sentAt) < 2*time.Second {
		t.Fatalf("2nd request %v after the 503, before the Retry-After date (%v after)", second.Sub(sentAt), retryAt.Sub(sentAt))
	}
	got := lines(stdout)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^0\.\d{3}s  attempt 1  503  wait [0-9.]+m?s \(retry-after [0-9.]+m?s\)$`),
		regexp.MustCompile(`^[2-4]\.\d{3}s  attempt 2  200  done$`),
	}
	if len(got) != len(want) {
		t.Fatalf("stdout has %d lines; want %d:\n%s", len(got), len(want), stdout)
	}
	for i, re := range want {
		if !re.MatchString(got[i]) {
			t.Errorf("line %d = %q; want %v", i+1, got[i], re)
		}
	}
}

// TestHTTPOutcomes runs the command against servers and a closed port and
// checks the attempt lines, the exit status and the one-line reason.
func TestHTTPOutcomes(t *testing.T) {
	closed := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		return "http://" + ln.Addr().String() + "/"
	}
	statusOf := func(code int, retryAfter string) func(int, http.ResponseWriter) {
		return func(_ int, w http.ResponseWriter) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
		}
	}
	fast := []string{"--policy", "fixed:initial=10ms"}
	cases := []struct {
		name     string
		answer   func(int, http.ResponseWriter) // nil: a closed port
		args     []string
		code     int
		requests int
		lines    []string // regexps, one per stdout line
		stderr   string   // regexp; "" = empty
	}{
		{
			// Credentials do not improve with retries: one attempt, exit 1.
			name: "401 is not retried", answer: statusOf(401, ""), args: fast, code: 1, requests: 1,
			lines:  []string{`^0\.\d{3}s  attempt 1  401  giving up: not retryable$`},
			stderr: `^stampede: GET http://\S+: not retryable \(1 attempt\): last status 401 Unauthorized\n$`,
		},
		{
			// Nothing listens: each attempt is classed refused.
			name: "closed port", args: append([]string{"--retries", "2"}, fast...), code: 1,
			lines: []string{
				`^0\.\d{3}s  attempt 1  refused  wait 10ms \(backoff\)$`,
				`^0\.\d{3}s  attempt 2  refused  wait 10ms \(backoff\)$`,
				`^0\.\d{3}s  attempt 3  refused  giving up: retries exhausted$`,
			},
			stderr: `^stampede: GET http://127\.0\.0\.1:\d+/: retries exhausted \(3 attempts\): last error: .*connection refused \(refused\)\n$`,
		},
		{
			name: "503 until retries run out", answer: statusOf(503, ""), args: append([]string{"--retries", "1"}, fast...), code: 1, requests: 2,
			lines: []string{
				`^0\.\d{3}s  attempt 1  503  wait 10ms \(backoff\)$`,
				`^0\.\d{3}s  attempt 2  503  giving up: retries exhausted$`,
			},
			stderr: `retries exhausted \(2 attempts\): last status 503 Service Unavailable\n$`,
		},
		{
			// A hint above the cap: give up at once and say what was asked.
			name: "retry-after above the cap", answer: statusOf(503, "3600"), code: 1, requests: 1,
			lines:  []string{`^0\.\d{3}s  attempt 1  503  giving up: retry-after 1h0m0s above --max-retry-after$`},
			stderr: `^stampede: GET http://\S+: server asked to retry after 1h0m0s, above the 30s cap \(--max-retry-after\)\n$`,
		},
		{
			// --retry-after=false: the policy decides, and the line says so.
			name: "retry-after ignored", answer: func(n int, w http.ResponseWriter) {
				if n == 1 {
					statusOf(429, "3600")(n, w)
				}
			},
			args: append([]string{"--retry-after=false"}, fast...), requests: 2,
			lines: []string{
				`^0\.\d{3}s  attempt 1  429  wait 10ms \(backoff; Retry-After 1h0m0s ignored\)$`,
				`^0\.\d{3}s  attempt 2  200  done$`,
			},
		},
		{
			// Only the listed statuses are retried.
			name: "status not listed", answer: statusOf(503, ""), args: append([]string{"--status-codes", "429"}, fast...), code: 1, requests: 1,
			lines:  []string{`^0\.\d{3}s  attempt 1  503  giving up: not retryable$`},
			stderr: `not retryable \(1 attempt\)`,
		},
		{
			// A redirect is not a success, and it is not followed.
			name: "redirect", answer: statusOf(302, ""), code: 1, requests: 1,
			lines:  []string{`^0\.\d{3}s  attempt 1  302  done$`},
			stderr: `^stampede: GET http://\S+: final status 302 Found \(redirects are not followed\)\n$`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rec *recorder
			var url string
			if tc.answer == nil {
				url = closed(t)
			} else {
				rec, url = newRecorder(t, tc.answer)
			}
			code, stdout, stderr := runHTTP(t, append(tc.args, url)...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d", code, tc.code)
			}
			if rec != nil && rec.Requests() != tc.requests {
				t.Fatalf("server saw %d requests; want %d", rec.Requests(), tc.requests)
			}
			got := lines(stdout)
			if len(got) != len(tc.lines) {
				t.Fatalf("stdout has %d lines; want %d", len(got), len(tc.lines))
			}
			for i, l := range tc.lines {
				if !regexp.MustCompile(l).MatchString(got[i]) {
					t.Errorf("line %d = %q; want %s", i+1, got[i], l)
				}
			}
			if (tc.stderr == "") != (stderr == "") || (tc.stderr != "" && !regexp.MustCompile(tc.stderr).MatchString(stderr)) {
				t.Errorf("stderr = %q; want %s", stderr, tc.stderr)
			}
		})
	}
}

// TestHTTPRequestFlags: the body (inline and @file) and headers (commas
// kept, -H and --header mixed, in order) reach the server intact on every
// attempt, --data makes the method POST, and POST is
// retried because it carries an Idempotency-Key. Headers of one run do not
// leak into the next one in the same process.
func TestHTTPRequestFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "body.json")
	const body = `{"id":"m-1","text":"a, b"}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{body, "@" + file} {
		rec, url := newRecorder(t, func(n int, w http.ResponseWriter) {
			if n < 3 {
				w.WriteHeader(http.StatusBadGateway)
			}
		})
		code, _, _ := runHTTP(t, "--data", data, "-H", "Idempotency-Key: k-1", "--header", "Accept: text/plain, application/json",
			"-H", "X-Trace: 1", "--header", "X-Trace: 2", "--policy", "fixed:initial=10ms", url)
		if code != 0 || rec.Requests() != 3 {
			t.Fatalf("--data %s: exit %d after %d requests; want 0 after 3", data, code, rec.Requests())
		}
		for i := range 3 {
			h := rec.headers[i]
			if rec.bodies[i] != body || h.Get("Idempotency-Key") != "k-1" || h.Get("Accept") != "text/plain, application/json" ||
				strings.Join(h.Values("X-Trace"), " ") != "1 2" {
				t.Fatalf("request %d: body %q, headers %v", i+1, rec.bodies[i], h)
			}
		}
	}
	// The same command again, without headers: a POST without a key is
	// sent once, and no header of the earlier runs comes back.
	rec, url := newRecorder(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
	code, stdout, _ := runHTTP(t, "--data", "x", "--policy", "fixed:initial=10ms", url)
	if code != 1 || rec.Requests() != 1 || rec.headers[0].Get("Idempotency-Key") != "" {
		t.Fatalf("exit %d, requests %d, headers %v; want one POST without a key", code, rec.Requests(), rec.headers[0])
	}
	if !strings.Contains(stdout, "giving up: not retryable") {
		t.Fatalf("stdout %q", stdout)
	}
}

// TestHTTPBadInput: a bad URL or flag value gives one line naming it and
// exit status 2, before any request is sent.
func TestHTTPBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no scheme", args: []string{"example.com/x"}, want: `http: bad URL "example.com/x": want http[s]://HOST[:PORT]/PATH`},
		{name: "not http", args: []string{"ftp://127.0.0.1/x"}, want: `http: bad URL "ftp://127.0.0.1/x"`},
		{name: "websocket", args: []string{"ws://127.0.0.1/x"}, want: `http: bad URL "ws://127.0.0.1/x"`},
		{name: "no host", args: []string{"http:///x"}, want: `http: bad URL "http:///x"`},
		{name: "unparsable", args: []string{"http://[::1"}, want: `http: bad URL "http://[::1"`},
		{name: "no URL", args: nil, want: "http: want exactly one URL argument, got 0"},
		{name: "two URLs", args: []string{"http://a/", "http://b/"}, want: "http: want exactly one URL argument, got 2"},
		{name: "bad policy", args: []string{"--policy", "linear", "http://127.0.0.1/"}, want: `--policy: policy "linear"`},
		{name: "negative retries", args: []string{"--retries", "-1", "http://127.0.0.1/"}, want: "--retries must not be negative, got -1"},
		{name: "2xx status code", args: []string{"--status-codes", "429,200", "http://127.0.0.1/"}, want: `--status-codes: "200" is not a status to retry (want 400-599)`},
		{name: "zero cap", args: []string{"--max-retry-after", "0s", "http://127.0.0.1/"}, want: "--max-retry-after must be positive, got 0s"},
		{name: "header without colon", args: []string{"-H", "Accept", "http://127.0.0.1/"}, want: `-H: invalid value "Accept": want 'Name: value'`},
		{name: "bad method", args: []string{"--method", "GE T", "http://127.0.0.1/"}, want: `--method: "GE T" is not a valid method`},
		{name: "missing body file", args: []string{"--data", "@/nonexistent/body", "http://127.0.0.1/"}, want: "--data: open /nonexistent/body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHTTP(t, tc.args...)
			if code != 2 || stdout != "" || len(lines(stderr)) != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and one line containing %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// TestHTTPFinalStatusLineRedacted: the line of a final status that is not
// 2xx (a redirect here) shows the URL without its query token, user info
// or a --secret-header parameter.
func TestHTTPFinalStatusLineRedacted(t *testing.T) {
	_, u := newRecorder(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", "/elsewhere")
		w.WriteHeader(http.StatusMovedPermanently)
	})
	target := strings.Replace(u, "http://", "http://bob:pw-s3cr3t@", 1) + "/x?token=tok-s3cr3t&page=2"
	code, stdout, stderr := runHTTP(t, target)
	if code != 1 || !strings.Contains(stderr, "final status 301") {
		t.Fatalf("exit %d, stderr %q; want 1 and a final status 301", code, stderr)
	}
	if strings.Contains(stdout+stderr, "s3cr3t") || !strings.Contains(stderr, "token=<redacted>&page=2") {
		t.Errorf("the secret is shown, or the URL is not: stdout %q stderr %q", stdout, stderr)
	}
}
