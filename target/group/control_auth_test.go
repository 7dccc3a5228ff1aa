package group

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/target"
)

// rawControl makes a control request with the given token and Origin
// ("" for none) and returns the status.
func rawControl(t *testing.T, control, method, path, token, origin string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+control+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		controlapi.SetToken(req, token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRunControlNeedsToken: through the real listener of Run, a request
// without the token or with a wrong one is answered 401, one from a
// foreign Origin 403, and none of them reaches the server: the client
// stays connected and a stall or shutdown asked without the key is not
// applied.
func TestRunControlNeedsToken(t *testing.T) {
	line, _, _, errc := startRun(t, RunConfig{})
	conn := mustDial(t, "ws://"+line.Addr+"/")
	defer conn.Close()
	for _, tc := range []struct {
		name, method, path, token, origin string
		want                              int
	}{
		{"stats without token", "GET", "/stats", "", "", 401},
		{"shutdown without token", "POST", "/shutdown?mode=abrupt", "", "", 401},
		{"reject with a wrong token", "POST", "/reject?status=503&retry_after=1s&for=30s", controlapi.NewToken(), "", 401},
		{"stall from a foreign page", "POST", "/stall?for=30s", line.Token, "http://evil.example", 403},
		{"shutdown from a foreign page", "POST", "/shutdown?mode=abrupt", "", "http://evil.example", 403},
	} {
		if got := rawControl(t, line.Control, tc.method, tc.path, tc.token, tc.origin); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// The run is unaffected: a second client upgrades (no stall, no
	// reject), and the counters show two upgrades, nothing rejected.
	conn2 := mustDial(t, "ws://"+line.Addr+"/")
	defer conn2.Close()
	st := pollStats(t, line, func(st target.Stats) bool { return st.UpgradesOK == 2 })
	if st.UpgradesOK != 2 || st.UpgradesRejected != 0 {
		t.Fatalf("stats with the token: %+v; want 2 upgrades, none rejected", st)
	}
	if got := rawControl(t, line.Control, "POST", "/shutdown?mode=graceful", line.Token, ""); got != http.StatusAccepted {
		t.Fatalf("shutdown with the token: %d, want 202", got)
	}
	waitRun(t, errc)
}

// TestGroupProcsUseTheirTokens: a group gives each process a token in its
// plan; the process's own API refuses requests without it, and the group
// drives it with it.
func TestGroupProcsUseTheirTokens(t *testing.T) {
	g := startGroup(t, 2, target.Config{})
	seen := map[string]bool{}
	for _, p := range g.Procs() {
		if len(p.Token) != 64 || seen[p.Token] {
			t.Fatalf("process %d token %q: want its own 64-digit token", p.PID, p.Token)
		}
		seen[p.Token] = true
		control := p.Control[len("http://"):]
		if got := rawControl(t, control, "GET", "/stats", "", ""); got != 401 {
			t.Errorf("process %d without token: %d, want 401", p.PID, got)
		}
		if got := rawControl(t, control, "GET", "/stats", p.Token, ""); got != 200 {
			t.Errorf("process %d with its token: %d, want 200", p.PID, got)
		}
	}
	if err := g.Stall(context.Background(), 0); err != nil {
		t.Fatalf("group stall through the processes' APIs: %v", err)
	}
	if _, err := g.Stats(context.Background()); err != nil {
		t.Fatalf("group stats: %v", err)
	}
}

// pollStats reads the stats of the ready line's control API, with its
// token, until ok holds or 5 s have passed, and returns the last. The
// server counts a connection just after it wrote the 101 the client has
// read, so a count may trail the dial by a moment.
func pollStats(t *testing.T, line childproc.ReadyLine, ok func(target.Stats) bool) target.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := control(t, line, "GET", "/stats")
		if err != nil {
			t.Fatal(err)
		}
		var st target.Stats
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("stats with the token: %s, %v", resp.Status, err)
		}
		if ok(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}
