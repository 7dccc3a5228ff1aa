package spec

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestCheckURL: what can be checked of a URL without the network.
func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // the reason's start; "" for none
	}{
		{"ws://127.0.0.1:9001/", ""},
		{"wss://localhost/", ""},
		{"ws://[::1]:65535/x", ""},
		{"", "missing"},
		{"http://127.0.0.1/", `scheme must be ws or wss, got "http"`},
		{"ws://:9001/", "no host in"},
		{"localhost:9001", `"localhost:9001" has no scheme: write ws://localhost:9001/`},
		{"127.0.0.1:9001/ws?access_token=x", `"<redacted>" has no scheme: write ws://127.0.0.1:9001/ws?access_token=<redacted>`},
		{"ws://127.0.0.1:99999/", `port "99999" is out of range: want 1 to 65535`},
		{"ws://127.0.0.1:0/", `port "0" is out of range`},
		{"ws://127.0.0.1:/", `port "" is out of range`},
	} {
		_, err := CheckURL("Client.URL", tc.raw, "ws", "wss")
		var fe *FieldError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v; want no error", tc.raw, err)
		case tc.want != "" && (!errors.As(err, &fe) || fe.Field != "Client.URL" || !strings.HasPrefix(fe.Reason, tc.want)):
			t.Errorf("%q: %v; want a Client.URL error %q...", tc.raw, err, tc.want)
		}
	}
}

// TestCheckResolves: an address needs no lookup; a name under .invalid
// (RFC 6761: never resolves) is refused, whatever the resolver says why.
func TestCheckResolves(t *testing.T) {
	for _, raw := range []string{"ws://127.0.0.1/", "ws://[::1]:1/"} {
		if err := CheckResolves(context.Background(), "Client.URL", mustURL(t, raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	err := CheckResolves(context.Background(), "Client.URL", mustURL(t, "ws://nonexistent.invalid/"))
	if err == nil || !strings.HasPrefix(err.Error(), "Client.URL: host nonexistent.invalid does not resolve") {
		t.Errorf("error %v; want the host named as not resolving", err)
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
