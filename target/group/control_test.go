package group

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/target"
)

func TestControlHandler(t *testing.T) {
	s := startServer(t, target.Config{})
	waitReady(t, s)
	api := httptest.NewServer(ControlHandler(s))
	defer api.Close()
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantBody   string // substring of the answer
		check      func() bool
	}{
		{name: "backlog", method: "POST", path: "/backlog?n=8", wantStatus: 204,
			check: func() bool { return s.Backlog() == 8 }},
		{name: "backlog not a number", method: "POST", path: "/backlog?n=many", wantStatus: 400,
			wantBody: `parameter n="many": want an integer`},
		{name: "backlog zero", method: "POST", path: "/backlog?n=0", wantStatus: 400},
		{name: "accept rate", method: "POST", path: "/accept-rate?r=500", wantStatus: 204},
		{name: "accept rate negative", method: "POST", path: "/accept-rate?r=-1", wantStatus: 400},
		{name: "stall needs a duration", method: "POST", path: "/stall?for=3", wantStatus: 400,
			wantBody: "want a duration"},
		{name: "reject", method: "POST", path: "/reject?status=503&retry_after=2s&for=1h", wantStatus: 204,
			check: func() bool { r := dialWS(s.URL(), ""); return r.status == 503 && r.retryAfter == "2" }},
		{name: "reject ends", method: "POST", path: "/reject?status=503&retry_after=0s&for=0s", wantStatus: 204,
			check: func() bool { r := dialWS(s.URL(), ""); return r.err == nil }},
		{name: "reject bad status", method: "POST", path: "/reject?status=200&retry_after=1s&for=1s", wantStatus: 400},
		{name: "stats", method: "GET", path: "/stats", wantStatus: 200, wantBody: `"upgrades_rejected":1`},
		{name: "stall by GET is not allowed", method: "GET", path: "/stall?for=1s", wantStatus: 405},
		{name: "shutdown mode", method: "POST", path: "/shutdown?mode=later", wantStatus: 400,
			wantBody: "want graceful or abrupt"},
		{name: "shutdown", method: "POST", path: "/shutdown?mode=abrupt", wantStatus: 202,
			check: func() bool { <-s.Done(); return true }},
		{name: "after shutdown", method: "POST", path: "/stall?for=1s", wantStatus: 409},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, api.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var body strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		body.Write(buf[:n])
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || !strings.Contains(body.String(), tc.wantBody) {
			t.Fatalf("%s: %d %q; want %d containing %q", tc.name, resp.StatusCode, body.String(), tc.wantStatus, tc.wantBody)
		}
		if tc.check != nil && !tc.check() {
			t.Fatalf("%s: not applied", tc.name)
		}
	}
}

func TestStatsJSON(t *testing.T) {
	b, err := json.Marshal(target.Stats{Procs: 1, Conns: 2, Accepted: 3, UpgradesOK: 4, UpgradesRejected: 5,
		UpgradesFailed: 6, EarlyRetries: 7, MessagesIn: 8, MessagesOut: 9})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"procs":1,"conns":2,"accepted":3,"upgrades_ok":4,"upgrades_rejected":5,` +
		`"upgrades_failed":6,"early_retries":7,"messages_in":8,"messages_out":9}`
	if string(b) != want {
		t.Fatalf("target.Stats JSON =\n%s\nwant\n%s", b, want)
	}
	sum := target.Stats{Procs: 1, Conns: 2, EarlyRetries: 1, HTTPStatus: map[string]uint64{"200": 2, "429": 1}}.Add(
		target.Stats{Procs: 1, Conns: 3, MessagesIn: 4, HTTPStatus: map[string]uint64{"200": 1}, IdempotentReplays: 3})
	want2 := target.Stats{Procs: 2, Conns: 5, EarlyRetries: 1, MessagesIn: 4,
		HTTPStatus: map[string]uint64{"200": 3, "429": 1}, IdempotentReplays: 3}
	if !reflect.DeepEqual(sum, want2) {
		t.Fatalf("Add = %+v", sum)
	}
}
