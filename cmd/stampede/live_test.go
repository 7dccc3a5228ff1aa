package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/internal/testenv"
)

// cdp is a Chrome DevTools Protocol session with one page of a headless
// Chromium: what the test needs of it (navigate, evaluate, screenshot),
// over gobwas/ws.
type cdp struct {
	conn net.Conn
	id   int
}

// startChromium starts headless Chromium with a page open and returns a
// session with it; the browser is killed at the test's end.
func startChromium(t *testing.T) *cdp {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		testenv.SkipUnlessRequired(t, "chromium not installed: the live page is not opened in a browser")
	}
	profile := t.TempDir()
	cmd := exec.Command(chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--window-size=1400,1000", "about:blank")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Chromium writes its DevTools port into the profile once it listens.
	var port string
	for deadline := time.Now().Add(30 * time.Second); port == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			port, _, _ = strings.Cut(string(b), "\n")
		}
	}
	if port == "" {
		t.Fatalf("chromium never listened for DevTools:\n%s", errb.String())
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		if len(targets) > 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			conn, _, _, err := ws.Dial(context.Background(), tg.WebSocketDebuggerURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			return &cdp{conn: conn}
		}
	}
	t.Fatalf("chromium has no page: %+v", targets)
	return nil
}

// call sends one command and returns its result, skipping the events the
// browser sends meanwhile.
func (c *cdp) call(t *testing.T, method string, params any, result any) {
	t.Helper()
	c.id++
	msg, _ := json.Marshal(map[string]any{"id": c.id, "method": method, "params": params})
	c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := wsutil.WriteClientText(c.conn, msg); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := wsutil.ReadServerText(c.conn)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if json.Unmarshal(b, &r) != nil || r.ID != c.id {
			continue
		}
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(r.Result, result); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
		return
	}
}

// eval returns the string expr evaluates to in the page.
func (c *cdp) eval(t *testing.T, expr string) string {
	t.Helper()
	var r struct {
		Result struct{ Value any } `json:"result"`
	}
	c.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	s, _ := r.Result.Value.(string)
	return s
}

// screenshot saves the page as dir/name.png.
func (c *cdp) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	var r struct{ Data string }
	c.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(b) == 0 {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// livePanel is the live panel's data attributes, as the page's script
// sets them from each frame.
type livePanel struct {
	State     string `json:"state"`
	T         string `json:"t"`
	Clients   string `json:"clients"`
	Connected string `json:"connected"`
	Events    string `json:"events"`
	Became    string `json:"became"`
	// Subtitle is the run's subtitle under the page's title, as shown.
	Subtitle string `json:"subtitle"`
}

func (p livePanel) num(t *testing.T, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("panel %+v: %q is no number", p, s)
	}
	return v
}

const panelExpr = `JSON.stringify(Object.assign({}, (document.getElementById("live") || {dataset: {}}).dataset,
	{subtitle: (document.querySelector("section.run p.sub") || {}).textContent || ""}))`

// TestLivePageInBrowser is the live page's acceptance: headless Chromium
// opens the URL `stampede run --live` prints, for a 2,000-client run with
// a restart at 10 s that keeps the target down 4 s. Read through the
// page's own data attributes (screenshots kept at 3, 12 and 20 s of the
// run, by the page's clock): the fleet is all connected from 3 s (and
// before the restart: a loaded machine may show the page's first frame
// seconds late), under 10 % at 12 s (by 13.9 s at the latest, still
// inside the down time) with the restart marked at its time, all back at
// 20 s (by 27 s at the latest: a loaded machine may start the new target
// seconds late, ready at 18.9 s once); the run's subtitle (served before the
// first frame) says the fleet's size and the clients connected at 3 s and
// 12 s; at the end the page became report.html and draws report.html's
// data.
func TestLivePageInBrowser(t *testing.T) {
	c := startChromium(t)
	out := filepath.Join(t.TempDir(), "run")
	shots := os.Getenv("STAMPEDE_LIVE_SHOTS") // keep the screenshots there
	if shots == "" {
		shots = t.TempDir()
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const clients = 2000
	run := exec.CommandContext(ctx, exe, "run", "--clients", strconv.Itoa(clients), "--duration", "28s",
		"--chaos", "at 10s restart abrupt down=4s", "--policy", "exp:initial=100ms,max=1s,jitter=0.5",
		"--live", "--out", out, "--progress-interval", "1s")
	run.Env = append(os.Environ(), testMainEnv+"=1")
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	urls := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if u := regexp.MustCompile(`^live: (http://\S+)`).FindStringSubmatch(sc.Text()); u != nil {
				urls <- u[1]
			}
		}
		io.Copy(io.Discard, stderr)
		done <- run.Wait()
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("stampede run ended before printing the live URL: %v\n%s", err, log.String())
	case <-ctx.Done():
		t.Fatal("no live URL printed")
	}
	c.call(t, "Page.enable", map[string]any{}, nil)
	c.call(t, "Page.navigate", map[string]any{"url": url}, nil)

	// One reading per instant of the run, by the page's own clock (its
	// latest frame's t): a loaded machine may draw late, never early.
	read := func() livePanel {
		var p livePanel
		json.Unmarshal([]byte(c.eval(t, panelExpr)), &p)
		return p
	}
	// at waits for the page's clock to reach sec, and then for ok (nil:
	// none) until it passes by: the page shows the timeline merged so far,
	// which trails its clock by the loadgens' last second.
	at := func(sec, by float64, ok func(livePanel) bool) livePanel {
		for ctx.Err() == nil {
			p := read()
			if p.State == "final" || (p.T != "" && p.num(t, p.T) >= sec && (ok == nil || ok(p) || p.num(t, p.T) >= by)) {
				c.screenshot(t, shots, fmt.Sprintf("live-%02.0fs", sec))
				t.Logf("at %gs: %+v", sec, p)
				return p
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the page never reached %gs of the run:\n%s", sec, log.String())
		return livePanel{}
	}
	full := func(p livePanel) bool { return p.Connected == strconv.Itoa(clients) }
	p3 := at(3, 9.9, full) // before the restart
	if p3.num(t, p3.Connected) != clients || p3.num(t, p3.Clients) != clients {
		t.Errorf("at 3 s: %s of %s connected, want all %d", p3.Connected, p3.Clients, clients)
	}
	// The subtitle, served before the first frame, follows the frames:
	// the fleet's size and the clients connected, not an empty run's.
	subtitle := func(p livePanel) {
		if want := fmt.Sprintf(" %d clients (%s connected) in ", clients, p.Connected); !strings.Contains(p.Subtitle, want) {
			t.Errorf("at %s s: the subtitle is %q, want it to say %q", p.T, p.Subtitle, want)
		}
	}
	subtitle(p3)
	// The target is down from 10 s to 14 s: the drop may reach the page
	// as late as the merged timeline trails, never after 14 s.
	down := func(p livePanel) bool { return p.num(t, p.Connected) < clients/10 }
	p12 := at(12, 13.9, down)
	if got := p12.num(t, p12.Connected); got >= clients/10 {
		t.Errorf("at 12 s (%s s): %g connected, want under 10 %% of %d: the target is down", p12.T, got, clients)
	}
	subtitle(p12)
	var marks []struct {
		Name  string   `json:"name"`
		Start float64  `json:"start_s"`
		Ready *float64 `json:"ready_s"`
	}
	if err := json.Unmarshal([]byte(p12.Events), &marks); err != nil || len(marks) != 1 ||
		!strings.HasPrefix(marks[0].Name, "restart") || marks[0].Start < 9.9 || marks[0].Start > 11 {
		t.Errorf("at 12 s: events %s, want the restart marked at 10 s", p12.Events)
	}
	p20 := at(20, 27, full)
	if got := p20.num(t, p20.Connected); got != clients {
		t.Errorf("at 20 s (%s s): %g connected, want all %d back", p20.T, got, clients)
	}

	// The end: the page becomes report.html and draws its data.
	var final livePanel
	for final = read(); final.Became == "" && ctx.Err() == nil; final = read() {
		time.Sleep(200 * time.Millisecond)
	}
	c.screenshot(t, shots, "live-final")
	if err := <-done; err != nil {
		t.Fatalf("stampede run: %v\n%s", err, log.String())
	}
	if final.State != "final" || final.Became != "report.html" {
		t.Fatalf("the page at the end: %+v", final)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)const DATA = (.*?);</script>`).FindSubmatch(html)
	if m == nil {
		t.Fatal("report.html holds no DATA")
	}
	var want, got any
	if err := json.Unmarshal(m[1], &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(c.eval(t, "JSON.stringify(window.stampedeReport.data())")), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the live page's final data differ from report.html's")
	}
	title := regexp.MustCompile(`<title>(.*?)</title>`).FindSubmatch(html)
	if pt := c.eval(t, "document.title"); title == nil || pt != string(title[1]) {
		t.Errorf("the page's title %q, report.html's %q", pt, title)
	}
	if n := c.eval(t, `String(document.querySelectorAll("[data-chart] canvas").length)`); n == "0" {
		t.Error("the final page drew no plot")
	}
	token := strings.SplitN(url, "token=", 2)[1]
	if strings.Contains(c.eval(t, "document.documentElement.outerHTML"), token) {
		t.Error("the page holds the token")
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), token) {
			t.Errorf("%s holds the live page's token", filepath.Base(f))
		}
	}
	t.Logf("screenshots in %s", shots)
}
