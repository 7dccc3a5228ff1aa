package main

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// secret is what the tests below give as a credential; it must reach the
// server and appear in no file, banner or log line of stampede.
const secret = "S3cr3t"

// TestHTTPFleetSecrets: a fleet given a secret in a header, in a query
// parameter or in the URL's user info sends it to the server, and leaves
// none of it in its results folder or its output; the folder is 0700 and
// every file in it 0600, report.html rendered again by `stampede report`
// included, which draws the fleet's own plots.
func TestHTTPFleetSecrets(t *testing.T) {
	var mu sync.Mutex
	var seen []string // what carried the secret to the server
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		u, p, _ := r.BasicAuth()
		for what, v := range map[string]string{"header": r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"),
			"query": r.URL.RawQuery, "userinfo": u + ":" + p} {
			if strings.Contains(v, secret) {
				seen = append(seen, what)
			}
		}
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	withUser := *base
	withUser.User = url.UserPassword("bob", secret)
	for _, tc := range []struct {
		name string
		args []string
		via  string
	}{
		{"authorization", []string{"--header", "Authorization: Bearer " + secret, srv.URL + "/"}, "header"},
		{"api key header", []string{"--header", "X-Api-Key: " + secret, srv.URL + "/"}, "header"},
		{"query", []string{srv.URL + "/p?access_token=" + secret + "&page=1"}, "query"},
		{"userinfo", []string{withUser.String() + "/"}, "userinfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"--clients", "3", "--rate", "30", "--duration", "300ms", "--out", out}, tc.args...)
			code, stdout, stderr := runHTTP(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			mu.Lock()
			reached := strings.Join(seen, ",")
			mu.Unlock()
			if !strings.Contains(reached, tc.via) {
				t.Fatalf("the server never saw the secret by %s (saw it by %q): the test proves nothing", tc.via, reached)
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("the secret is in the output:\n%s%s", stdout, stderr)
			}
			var rep bytes.Buffer
			if code := runApp([]string{"stampede", "report", out}, &rep, &rep); code != 0 {
				t.Fatalf("report: exit %d: %s", code, rep.String())
			}
			checkPrivate(t, out)
			page, err := os.ReadFile(filepath.Join(out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			for _, chart := range []string{`data-chart="http-rate"`, `data-chart="http-statuses"`, `data-chart="http-latency"`} {
				if !bytes.Contains(page, []byte(chart)) {
					t.Errorf("report.html has no %s", chart)
				}
			}
			if bytes.Contains(page, []byte(`data-chart="connected"`)) {
				t.Error("report.html draws a WebSocket run's plots for an HTTP fleet")
			}
		})
	}
}

// checkPrivate fails t when a file under dir holds secret, or is not
// 0600, or a folder is not 0700.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", path)
			}
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Errorf("%s holds %d files; want summary.json, the timeline, the logs and report.html", dir, files)
	}
}

// TestOutExisting: an --out that holds a results folder is refused, in one
// line naming --out, before any request is sent; --force writes it again.
func TestOutExisting(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	out := t.TempDir()
	args := []string{"--clients", "2", "--rate", "20", "--duration", "200ms", "--out", out, srv.URL + "/"}
	if code, _, stderr := runHTTP(t, args...); code != 0 {
		t.Fatalf("first run: exit %d, %q", code, stderr)
	}
	mu.Lock()
	before := requests
	mu.Unlock()
	for _, cmd := range [][]string{
		append([]string{"stampede", "http"}, args...),
		{"stampede", "run", "--clients", "2", "--duration", "1s", "--out", out},
		{"stampede", "simulate", "--clients", "2", "--duration", "1s", "--out", out},
	} {
		var stdout, stderr bytes.Buffer
		code := runApp(cmd, &stdout, &stderr)
		if code != 2 || len(lines(stderr.String())) != 1 || !strings.Contains(stderr.String(), "--out") || !strings.Contains(stderr.String(), "--force") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming --out and --force", cmd[1], code, stderr.String())
		}
	}
	mu.Lock()
	after := requests
	mu.Unlock()
	if after != before {
		t.Errorf("the refused run sent %d requests", after-before)
	}
	if code, _, stderr := runHTTP(t, append([]string{"--force"}, args...)...); code != 0 {
		t.Errorf("--force: exit %d, %q", code, stderr)
	}
}
