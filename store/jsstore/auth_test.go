package jsstore

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stampede-dev/stampede/store"
)

// TestServerNeedsCredential: the embedded server admits only the
// credential it drew at start, which its URL carries. A client without
// it, or with another password, cannot connect, so it can neither list
// the stream nor purge it; with it, the stream is there to list (the
// refusal is the credential's doing, not an empty server's).
func TestServerNeedsCredential(t *testing.T) {
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	s, err := store.Open(ctx, srv.URL()+"?sync=1", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Append(ctx, "r", "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if u.User.Username() != serverUser || !ok || len(pw) != 32 {
		t.Fatalf("URL credential %q: want user %s and a 32-digit password", u.Redacted(), serverUser)
	}
	if other, _ := StartServer(t.TempDir()); other != nil {
		defer other.Close()
		if ou, _ := url.Parse(other.URL()); ou != nil {
			if opw, _ := ou.User.Password(); opw == pw {
				t.Fatal("two servers drew the same password")
			}
		}
	}
	bare := "nats://" + u.Host
	wrong := "nats://" + serverUser + ":" + strings.Repeat("0", 32) + "@" + u.Host
	for _, c := range []struct{ name, url string }{{"no credential", bare}, {"a wrong password", wrong}} {
		nc, err := nats.Connect(c.url, nats.MaxReconnects(0))
		if err == nil {
			js, _ := jetstream.New(nc)
			names := js.StreamNames(ctx)
			var listed []string
			for n := range names.Name() {
				listed = append(listed, n)
			}
			perr := func() error {
				st, err := js.Stream(ctx, DefaultStream)
				if err != nil {
					return err
				}
				return st.Purge(ctx)
			}()
			nc.Close()
			t.Fatalf("%s: connected; listed streams %v, purge error %v", c.name, listed, perr)
		}
		if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("%s: connect error %v, want an authorization violation", c.name, err)
		}
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatalf("with the credential: %v", err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	info, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatalf("with the credential, stream %s: %v", DefaultStream, err)
	}
	if n := info.CachedInfo().State.Msgs; n == 0 {
		t.Fatalf("with the credential the stream holds %d messages, want some", n)
	}
}
