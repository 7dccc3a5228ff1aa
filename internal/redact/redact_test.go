package redact

import (
	"net/http"
	"strings"
	"testing"
)

func TestHeader(t *testing.T) {
	h := http.Header{
		"Authorization": {"Bearer s3cr3t"},
		"Cookie":        {"a=1", "b=2"},
		"X-Api-Key":     {"k3y"},
		"X-Trace":       {"visible"},
	}
	got := Header(h, []string{"x-api-key"})
	for k, want := range map[string][]string{
		"Authorization": {Mark}, "Cookie": {Mark, Mark}, "X-Api-Key": {Mark}, "X-Trace": {"visible"},
	} {
		if strings.Join(got[k], ",") != strings.Join(want, ",") {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if h.Get("Authorization") != "Bearer s3cr3t" {
		t.Error("Header changed its argument")
	}
	if Header(nil, nil) != nil {
		t.Error("Header(nil) is not nil")
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"wss://user:pa55@staging.example:8443/ws?x=1", "wss://" + Mark + "@staging.example:8443/ws?x=1"},
		{"redis://:pa55@127.0.0.1:6379/0", "redis://" + Mark + "@127.0.0.1:6379/0"},
		{"ws://127.0.0.1:8080/ws", "ws://127.0.0.1:8080/ws"},
		// Does not parse, and may hold user info: hidden whole.
		{"ws://us er:p@ss@%zz/", Mark},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValuesScrub(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer s3cr3t"}, "X-Trace": {"visible"}}
	vals := Values(h, nil, "wss://bob:pa55@host/")
	s := Scrub("auth Bearer s3cr3t for bob with pa55, trace visible", vals)
	if strings.Contains(s, "s3cr3t") || strings.Contains(s, "pa55") || strings.Contains(s, "bob") || !strings.Contains(s, "visible") {
		t.Errorf("Scrub: %q", s)
	}
}
