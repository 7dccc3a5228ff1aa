package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/store"
)

// TestBadURLHidesPassword: a store URL that does not parse is quoted in
// the error with its password masked (url.Parse's own error quotes it).
func TestBadURLHidesPassword(t *testing.T) {
	for _, raw := range []string{
		"redis://u:secret99@host:badport/0",
		"postgres://u:secret99@ho st/db",
		"redis://:secret99@[::1/0",
		"file://u:secret99@elsewhere/x",             // a host in a file URL
		"#://u:secret99@",                           // no scheme; what reads as userinfo is the fragment (found by FuzzResolve)
		"redis://usr9:pw/secret99@127.0.0.1:1/0",    // a '/' in the password: url.Parse quotes ":pw" as a port
		"redis://usr9:secret99@127.0.0.1:1/0?x=%zz", // a bad query: the user name too
		"nosuch://usr9:secret99@127.0.0.1:1/0",      // an unknown scheme quotes the URL
	} {
		_, err := store.Open(context.Background(), raw, store.Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded", raw)
		}
		if strings.Contains(err.Error(), "secret99") || strings.Contains(err.Error(), "usr9") || strings.Contains(err.Error(), "pw/") {
			t.Errorf("Open(%q) error %q shows the password or the user name", raw, err)
		}
	}
}
