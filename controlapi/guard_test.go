package controlapi

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// serve runs Guard(ok handler) on a real loopback listener and returns its
// address.
func serve(t *testing.T, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("applied")) })
	hs := &http.Server{Handler: Guard(ok, addr, token)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return addr
}

func TestGuard(t *testing.T) {
	token := NewToken()
	addr := serve(t, token)
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		name   string
		host   string // Host header; "" means addr
		auth   string // Authorization header; "-" means none
		origin string
		site   string // Sec-Fetch-Site
		want   int
	}{
		{name: "token", auth: "Bearer " + token, want: 200},
		{name: "no token", auth: "-", want: 401},
		{name: "wrong token", auth: "Bearer " + NewToken(), want: 401},
		{name: "token without Bearer", auth: token, want: 401},
		{name: "token prefix", auth: "Bearer " + token[:63], want: 401},
		{name: "localhost with the port", host: "localhost:" + port, auth: "Bearer " + token, want: 200},
		{name: "[::1] with the port", host: "[::1]:" + port, auth: "Bearer " + token, want: 200},
		{name: "same origin", origin: "http://" + addr, auth: "Bearer " + token, want: 200},
		// A page elsewhere: refused before the token is even looked at.
		{name: "foreign origin", origin: "http://evil.example", auth: "Bearer " + token, want: 403},
		{name: "foreign origin, no token", origin: "http://evil.example", auth: "-", want: 403},
		{name: "null origin", origin: "null", auth: "Bearer " + token, want: 403},
		{name: "same host, other port origin", origin: "http://127.0.0.1:1", auth: "Bearer " + token, want: 403},
		{name: "cross-site fetch", site: "cross-site", auth: "Bearer " + token, want: 403},
		// DNS rebinding: a name that resolves to 127.0.0.1.
		{name: "rebound name", host: "evil.example:" + port, auth: "Bearer " + token, want: 421},
		{name: "other port", host: "127.0.0.1:1", auth: "Bearer " + token, want: 421},
		{name: "no port", host: "127.0.0.1", auth: "Bearer " + token, want: 421},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(context.Background(), "POST", "http://"+addr+"/stall?for=1s", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.auth != "-" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer")
			}
		})
	}
}

func TestNewTokenDiffers(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 64 || a == b {
		t.Fatalf("tokens %q and %q: want two different 64-digit ones", a, b)
	}
}

func TestGuardRefusesEmptyToken(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Guard with an empty token did not panic")
		}
	}()
	Guard(http.NotFoundHandler(), "127.0.0.1:1", "")
}

func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		host, addr string
		want       bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"LOCALHOST:80", "127.0.0.1:80", true},
		{"127.0.0.2:80", "127.0.0.1:80", true}, // loopback all the same
		{"10.1.2.3:80", "127.0.0.1:80", false},
		{"10.1.2.3:80", "10.1.2.3:80", true},
		{"10.1.2.3:80", "0.0.0.0:80", true}, // any address of the machine
		{"[fe80::1]:80", "[::]:80", true},
		{"host.example:80", "0.0.0.0:80", false}, // names stay out
		{"10.1.2.3:81", "0.0.0.0:80", false},
		{"", "127.0.0.1:80", false},
	} {
		if got := HostAllowed(tc.host, tc.addr); got != tc.want {
			t.Errorf("HostAllowed(%q, %q) = %v, want %v", tc.host, tc.addr, got, tc.want)
		}
	}
}

func TestListenWarnsBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:0", false},
		{"localhost:0", false},
		{"0.0.0.0:0", true}, // every interface
	} {
		var buf bytes.Buffer
		ln, err := Listen(tc.addr, &buf)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if got := strings.Contains(buf.String(), "warning: control API listens on"); got != tc.warn {
			t.Errorf("Listen(%q) wrote %q; want a warning: %v", tc.addr, buf.String(), tc.warn)
		}
	}
}
