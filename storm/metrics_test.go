package storm

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestRunMetrics runs a tiny in-process fleet against the bundled
// target with --metrics-addr 127.0.0.1:0, scrapes /metrics over HTTP
// while it runs, checks the fleet's figures, and that the server is gone
// once Run returns.
func TestRunMetrics(t *testing.T) {
	srv, err := target.Start(target.Config{Server: spec.Server{Addr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	pol, err := backoff.Parse("fixed:initial=1s")
	if err != nil {
		t.Fatal(err)
	}

	// The metrics URL is the first line on the log.
	logR, logW := io.Pipe()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "metrics: "); ok {
				urls <- u
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Config{
			Fleet:        loadgen.Config{Client: spec.Client{URL: srv.URL(), Clients: 20, Policy: pol, Seed: 7}},
			LoadgenProcs: 1,
			Duration:     30 * time.Second, // ended by cancel once checked
			Log:          logW,
			MetricsAddr:  "127.0.0.1:0",
		})
		logW.Close()
		done <- err
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Run returned before serving metrics: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no metrics line on the log in 10 s")
	}

	// Poll (bounded) until the whole fleet is connected.
	want := map[string]string{
		"stampede_clients":                                 "20",
		"stampede_connected_clients":                       "20",
		"stampede_connect_attempts_total":                  "20",
		"stampede_connect_successes_total":                 "20",
		`stampede_connect_failures_total{class="refused"}`: "0",
		`stampede_disconnects_total{class="closed_1006"}`:  "0",
		`stampede_stopped_clients{class="tls"}`:            "0",
		"stampede_messages_sent_total":                     "0",
	}
	var got map[string]string
	for i := 0; i < 100; i++ {
		got = scrapeText(t, url)
		if got["stampede_connected_clients"] == "20" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	var info string
	for k := range got {
		if strings.HasPrefix(k, "stampede_run_info{") {
			info = k
		}
	}
	if !strings.Contains(info, `policy="fixed:initial=1s"`) || !strings.Contains(info, `run_id="`) {
		t.Errorf("run info %q lacks the policy or run id", info)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, ErrInterrupted) {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of the cancel")
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("metrics still served after Run returned")
	}
}

// scrapeText GETs a metrics URL and returns its samples as
// "name{labels}" -> value.
func scrapeText(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}
