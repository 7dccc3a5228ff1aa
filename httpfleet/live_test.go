package httpfleet

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/report/live"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/spec"
)

// liveFrame is what the test reads of a frame of the live page's stream.
type liveFrame struct {
	State    string            `json:"state"`
	T        float64           `json:"t_s"`
	Clients  int               `json:"clients"`
	Failures map[string]uint64 `json:"failures"`
	HTTP     *live.HTTPFigures `json:"http"`
	SLO      []live.SLOState   `json:"slo"`
	Data     json.RawMessage   `json:"data"`
}

// readFrames sends the stream's frames on out until it ends.
func readFrames(body *bufio.Reader, out chan<- liveFrame) {
	defer close(out)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var f liveFrame
			if json.Unmarshal([]byte(data), &f) == nil {
				out <- f
			}
		}
	}
}

// TestLivePage runs a fleet over a 20/s token bucket (429 with
// Retry-After: 1 above it) with its live page, over real sockets: the
// page's URL is announced before the first request, the page is guarded
// (no token 401, a foreign Origin 403, a rebinding Host 421), its stream
// delivers the fleet's own figures while it runs (requests, 429s by
// class, the Retry-After herd, the SLO's state so far), its last frame
// is the results folder's (report.html's data, the summary's figures),
// and the report.html it then fetches, late, is the folder's.
func TestLivePage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	urls := make(chan string, 1)
	gates, err := slo.ParseSLOs([]string{"goodput>=1000"})
	if err != nil {
		t.Fatal(err)
	}
	p := backoff.Policy{Kind: backoff.Exp, Initial: 50 * time.Millisecond, Multiplier: 1, Max: 50 * time.Millisecond}
	cfg := Config{URL: limited(t) + "/", HTTPFleet: spec.HTTPFleet{Clients: 5, Rate: 60, Duration: 2500 * time.Millisecond, Grace: 1500 * time.Millisecond},
		Retry: httpretry.Config{Policy: &p}, SLO: gates,
		Live: &live.Config{Every: 200 * time.Millisecond, Announce: func(u string) { urls <- u }}}
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, _, err := RunTo(context.Background(), cfg, dir)
		done <- ran{res, err}
	}()
	var tokenURL string
	select {
	case tokenURL = <-urls:
	case r := <-done:
		t.Fatalf("the fleet ended without announcing its page: %v", r.err)
	}
	base, _ := url.Parse(tokenURL)
	bare := base.Scheme + "://" + base.Host + "/"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		name string
		u    string
		hdr  map[string]string
		want int
	}{
		{"no token", bare + "events", nil, http.StatusUnauthorized},
		{"foreign Origin", tokenURL, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"rebinding Host", tokenURL, map[string]string{"Host": "evil.example:" + base.Port()}, http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("GET", c.u, nil)
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		req.Host = c.hdr["Host"]
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	page, err := browser.Get(tokenURL)
	if err != nil {
		t.Fatal(err)
	}
	html := readAll(t, page)
	// Served before the first request, the page is already an HTTP
	// fleet's, its subtitle the fleet's size.
	if !strings.Contains(html, `data-chart="http-rate"`) || !regexp.MustCompile(`data-sub="clients">5<`).MatchString(html) {
		t.Errorf("the page at the start is not the HTTP fleet's of 5 clients")
	}
	stream, err := browser.Get(bare + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	frames := make(chan liveFrame, 64)
	go readFrames(bufio.NewReader(stream.Body), frames)
	var running []liveFrame
	var last liveFrame
	for f := range frames {
		if f.State == "running" {
			running = append(running, f)
		}
		last = f
	}
	// The page takes report.html once its stream ends (live.js): the
	// server waits for that before it closes, however slow the page.
	time.Sleep(300 * time.Millisecond)
	became, err := browser.Get(bare + report.File)
	if err != nil {
		t.Fatalf("report.html after the last frame: %v", err)
	}
	becameHTML := readAll(t, became)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkRunning(t, running)
	checkFinal(t, last, dir, r.res)
	if b, err := os.ReadFile(filepath.Join(dir, report.File)); err != nil || string(b) != becameHTML {
		t.Errorf("the page's report.html is not the folder's: %v", err)
	}
}

// checkRunning: frames came while the fleet ran, with its own figures:
// requests and attempts (counted once answered) so far, 429s among the
// failures, the Retry-After herd (hints
// seen, a peak of attempts above the offered load), the SLO failing so
// far.
func checkRunning(t *testing.T, running []liveFrame) {
	t.Helper()
	if len(running) < 5 {
		t.Fatalf("%d running frames in a 2.5 s run fed every 200 ms", len(running))
	}
	var mid *liveFrame
	for i := range running {
		f := &running[i]
		if f.HTTP == nil || f.Clients != 5 {
			t.Fatalf("frame at %.1f s: http %v, clients %d: not the HTTP fleet's", f.T, f.HTTP, f.Clients)
		}
		if f.T >= 1.5 && f.T < 2.5 && mid == nil {
			mid = f
		}
	}
	if mid == nil {
		t.Fatalf("no frame between 1.5 s and 2.5 s of the run")
	}
	h := mid.HTTP
	t.Logf("at %.1f s: %+v failures %v slo %+v", mid.T, *h, mid.Failures, mid.SLO)
	if h.Requests == 0 || h.Attempts == 0 || mid.Failures["429"] == 0 || h.RetryAfterSeen == 0 {
		t.Errorf("at %.1f s: %+v, failures %v; want requests, attempts, 429s and Retry-After hints so far", mid.T, *h, mid.Failures)
	}
	if h.Offered != 6 || h.PeakSent == 0 {
		t.Errorf("at %.1f s: offered %g, peak %d per 100 ms; want 6 offered and a peak", mid.T, h.Offered, h.PeakSent)
	}
	if len(mid.SLO) != 1 || mid.SLO[0].State != "fail" {
		t.Errorf("at %.1f s: SLO %+v, want goodput>=1000 failing so far", mid.T, mid.SLO)
	}
	var data struct {
		Runs []struct {
			HTTP *struct {
				T []float64 `json:"t"`
			} `json:"http"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(mid.Data, &data); err != nil || len(data.Runs) != 1 || data.Runs[0].HTTP == nil || len(data.Runs[0].HTTP.T) < 10 {
		t.Errorf("at %.1f s: the plots' data hold no HTTP timeline so far: %v", mid.T, err)
	}
}

// checkFinal: the last frame is the results folder's: report.html's data,
// the summary's figures.
func checkFinal(t *testing.T, f liveFrame, dir string, res *Result) {
	t.Helper()
	if f.State != "final" || f.HTTP == nil {
		t.Fatalf("last frame %+v: want the final one with the fleet's figures", f)
	}
	b, err := os.ReadFile(filepath.Join(dir, report.File))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)const DATA = (.*?);</script>`).FindSubmatch(b)
	if m == nil {
		t.Fatal("report.html holds no DATA")
	}
	var want, got any
	if err := json.Unmarshal(m[1], &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(f.Data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the final frame's data differ from report.html's")
	}
	s := res.Summary
	if f.HTTP.Requests != s.Requests || f.HTTP.Attempts != s.Attempts || f.HTTP.Succeeded != s.Succeeded || f.Failures["429"] != s.Statuses["429"] {
		t.Errorf("final figures %+v, failures %v; the summary's: %d requests, %d attempts, %d succeeded, %d 429s",
			*f.HTTP, f.Failures, s.Requests, s.Attempts, s.Succeeded, s.Statuses["429"])
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", resp.Request.URL, resp.StatusCode)
	}
	return b.String()
}
