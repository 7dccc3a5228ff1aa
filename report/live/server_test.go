package live

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/slo"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, c *http.Client, u string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestGuard: the page refuses what the control APIs refuse, in their
// order: a Host that is not its address (DNS rebinding) 421, a foreign
// Origin 403, no cookie or a wrong token 401; the right token is
// exchanged for an HttpOnly SameSite=Strict cookie and a redirect to the
// bare URL, and the cookie alone opens the page and the stream.
func TestGuard(t *testing.T) {
	s := start(t, Config{})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %s: want loopback", s.URL())
	}
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/"))
	for _, c := range []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"no token", "", nil, 401},
		{"no token, stream", "events", nil, 401},
		{"wrong token", "?token=" + strings.Repeat("0", 64), nil, 401},
		{"rebinding Host, with the token", "?token=" + s.token, map[string]string{"Host": "evil.example:" + port}, 421},
		{"foreign Origin, with the token", "?token=" + s.token, map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site fetch", "?token=" + s.token, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a stolen-looking cookie", "", map[string]string{"Cookie": CookieName + "=" + s.token}, 401},
		{"localhost Host, right token", "?token=" + s.token, map[string]string{"Host": "localhost:" + port}, 303},
	} {
		resp := get(t, noRedirect, s.URL()+c.path, c.hdr)
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	resp := get(t, noRedirect, s.TokenURL(), nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("token exchange: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 || cs[0].Name != CookieName || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Value == s.token {
		t.Fatalf("cookie %+v: want one HttpOnly SameSite=Strict %s, not the token itself", cs, CookieName)
	}
	if rp := resp.Header.Get("Referrer-Policy"); rp != "no-referrer" {
		t.Errorf("Referrer-Policy %q: the token's URL must not leak as a referrer", rp)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	page := get(t, c, s.TokenURL(), nil)
	body, _ := io.ReadAll(page.Body)
	if page.StatusCode != 200 || page.Request.URL.RawQuery != "" {
		t.Fatalf("page after the exchange: %d at %s", page.StatusCode, page.Request.URL)
	}
	if strings.Contains(string(body), s.token) {
		t.Error("the page holds the token")
	}
	for _, want := range []string{`id="live"`, "EventSource", "window.stampedeReport"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The cookie alone, no token: the page, and the same Origin passes.
	u, _ := url.Parse(s.URL())
	if got := get(t, c, s.URL(), map[string]string{"Origin": "http://" + u.Host}).StatusCode; got != 200 {
		t.Errorf("page with the cookie and its own Origin: %d", got)
	}
}

// TestLoopbackUnlessTLS: an address beyond loopback needs TLS, refused
// before any socket opens.
func TestLoopbackUnlessTLS(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: "0.0.0.0:0"}, "beyond loopback"},
		{Config{Addr: "192.0.2.1:8080"}, "beyond loopback"},
		{Config{Addr: "127.0.0.1:0", TLSCert: "c.pem"}, "give both"},
		{Config{Addr: "nonsense"}, "HOST:PORT"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if err := (Config{Addr: "[::1]:0"}).Validate(); err != nil {
		t.Errorf("[::1]: %v", err)
	}
}

// snapshot is a run of 100 clients 3 s in: all connected by 1 s, a
// restart at 2 s that took 60 down, ready at 2.5 s, 50 back by 2.7 s.
func snapshot() Snapshot {
	tl := make(results.Timeline, 30)
	tl[2].Attempts, tl[2].Successes = 100, 100
	tl[20].Disconnects[connerr.Closed1006] = 60
	tl[22].Attempts, tl[22].Failures[connerr.Refused] = 60, 60
	tl[26].Attempts, tl[26].Successes = 50, 50
	tl[28].Attempts, tl[28].Failures[connerr.Refused] = 7, 7
	restart := results.Event{Kind: "restart", Mode: "abrupt", Spec: "at 2s restart abrupt", Start: 2 * time.Second, End: 2400 * time.Millisecond, Ready: 2500 * time.Millisecond}
	gates, _ := slo.ParseSLOs([]string{"r50<=1s", "r100<=1s", "failures<=10"})
	return Snapshot{At: 3 * time.Second, Label: "live", RunID: "r1", Seed: 1, Clients: 100, CapacityPer100ms: 50,
		Timeline: tl, Events: []results.Event{restart}, SLO: gates}
}

// readFrame reads one server-sent event from r.
func readFrame(t *testing.T, r *bufio.Reader) Frame {
	t.Helper()
	f, err := readEvent(r)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readEvent(r *bufio.Reader) (Frame, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return Frame{}, err
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var f Frame
			err := json.Unmarshal([]byte(data), &f)
			return f, err
		}
	}
}

// TestFrameFields: a frame carries what the page shows: connected and
// arrivals, the event marked, failures by class, the herd's peak against
// capacity, the recovery settled so far, the SLOs' states, and the
// report's plot data.
func TestFrameFields(t *testing.T) {
	s := start(t, Config{})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get(t, c, s.TokenURL(), nil)
	resp := get(t, c, s.URL()+"events", nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	s.Publish(snapshot())
	f := readFrame(t, bufio.NewReader(resp.Body))
	if f.State != "running" || f.Clients != 100 || f.Connected != 90 || f.T != 3 {
		t.Errorf("frame %+v: want running, 90 of 100 connected at 3 s", f)
	}
	if f.Arrivals != 7 { // the last complete bucket, 2.8 s
		t.Errorf("arrivals %d, want the last complete bucket's 7", f.Arrivals)
	}
	if len(f.Events) != 1 || f.Events[0].Start != 2 || f.Events[0].Ready == nil || *f.Events[0].Ready != 2.5 {
		t.Errorf("events %+v", f.Events)
	}
	if f.Failures["refused"] != 67 || len(f.Failures) != 1 {
		t.Errorf("failures %v", f.Failures)
	}
	if f.Capacity == nil || *f.Capacity != 50 {
		t.Errorf("capacity %v", f.Capacity)
	}
	if len(f.Recovery) != 1 {
		t.Fatalf("recovery %+v", f.Recovery)
	}
	r := f.Recovery[0]
	if r.Before != 100 || r.Back != 90 || r.Peak != 60 || r.R50 == nil || *r.R50 != 0.2 || r.R90 == nil || *r.R90 != 0.2 || r.R99 != nil || r.R100 != nil || r.Settled {
		t.Errorf("recovery %+v: want 90/100 back, peak 60, R50 and R90 0.2 s, R99 not yet", r)
	}
	want := map[string]string{"r50<=1s": "pass", "r100<=1s": "pending", "failures<=10": "fail"}
	for _, x := range f.SLO {
		if want[x.Expr] != x.State {
			t.Errorf("SLO %s: %s (%s), want %s", x.Expr, x.State, x.Detail, want[x.Expr])
		}
	}
	var data struct {
		Runs []struct {
			Connected []float64         `json:"connected"`
			Attempts  []float64         `json:"attempts"`
			Events    []json.RawMessage `json:"events"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(f.Data, &data); err != nil || len(data.Runs) != 1 || len(data.Runs[0].Connected) != 30 ||
		data.Runs[0].Connected[29] != 90 || data.Runs[0].Attempts[28] != 7 || data.Runs[0].Attempts[22] != 60 || len(data.Runs[0].Events) != 1 {
		t.Errorf("data %s: %v", f.Data, err)
	}
}

// TestUnderway: an event begun and not over is marked at its start with
// no readiness, and its recovery has no R figure yet.
func TestUnderway(t *testing.T) {
	s := snapshot()
	s.Underway = []results.Event{{Kind: "deploy", Mode: "command", Spec: "make deploy", Start: 2800 * time.Millisecond}}
	f, _, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != 2 || f.Events[1].Start != 2.8 || f.Events[1].Ready != nil || f.Events[0].Ready == nil {
		t.Fatalf("events %+v: want the restart ready and the deploy under way", f.Events)
	}
	if r := f.Recovery[1]; r.R50 != nil || r.Settled {
		t.Errorf("the deploy's recovery %+v: nothing settles before it is ready", r)
	}
}

// TestStalledSubscriber: a browser that stops reading never holds up
// Publish; its stream drops frames, and a reader beside it gets every
// frame.
func TestStalledSubscriber(t *testing.T) {
	s := start(t, Config{Buffer: 2})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get(t, c, s.TokenURL(), nil)
	// The stalled one: a raw connection that sends the request and never
	// reads a byte, with the smallest receive buffer.
	u, _ := url.Parse(s.URL())
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	cookie := jar.Cookies(u)[0]
	io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: "+u.Host+"\r\nCookie: "+cookie.Name+"="+cookie.Value+"\r\n\r\n")
	reader := get(t, c, s.URL()+"events", nil)
	br := bufio.NewReader(reader.Body)
	for s.Subscribers() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	// Frames of 256 KB: a few fill the stalled one's socket buffers.
	big, _ := json.Marshal(strings.Repeat("x", 256<<10))
	const frames = 40
	got := make(chan uint64, frames)
	go func() {
		defer close(got)
		for range frames {
			f, err := readEvent(br)
			if err != nil {
				return
			}
			got <- f.Seq
		}
	}()
	begin := time.Now()
	for i := range frames {
		b, err := event(Frame{Seq: uint64(i + 1), Data: big})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.publish(b, false); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("publishing frame %d waited for the stalled subscriber", i+1)
		}
		select {
		case seq, ok := <-got: // the reader takes each frame before the next
			if !ok || seq != uint64(i+1) {
				t.Fatalf("the reader got frame %d (%v), want %d", seq, ok, i+1)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the reader never got frame %d", i+1)
		}
	}
	took := time.Since(begin)
	if s.Dropped() == 0 {
		t.Error("no frame dropped for the stalled subscriber: was it buffered without bound?")
	}
	t.Logf("%d frames of 256 KB published in %s, %d dropped for the stalled reader", frames, took, s.Dropped())
}

// TestFinalFrame: Finish sends the results folder's figures as the last
// frame and ends the streams; a page opened later gets it at once.
func TestFinishWithoutFolder(t *testing.T) {
	s := start(t, Config{})
	s.Feed(snapshot)
	time.Sleep(50 * time.Millisecond)
	if err := s.Finish("", time.Second); err != nil {
		t.Fatal(err)
	}
	if seq := s.seq; seq == 0 {
		t.Error("the feed published nothing")
	}
}

// TestStartFed: the page served the moment its URL is announced is
// already the run's (its id, its fleet's size in the subtitle), not an
// empty run's, however long the run takes to say what it knows.
func TestStartFed(t *testing.T) {
	snap := func() Snapshot { time.Sleep(time.Second); return snapshot() }
	var page string
	s, err := StartFed(Config{Announce: func(u string) {
		jar, _ := cookiejar.New(nil)
		resp, err := (&http.Client{Jar: jar}).Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
	}}, snap)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(page, `data-sub="clients">100<`) || !strings.Contains(page, `data-sub="run_id">r1<`) {
		t.Errorf("the page at the announcement is not the run's: its subtitle is %q", regexp.MustCompile(`<p class="sub">run .*`).FindString(page))
	}
}
