package group

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/tlsconf"
)

// dialTLS upgrades a wss:// connection to url offering cache's session,
// closes it and says whether its handshake resumed.
func dialTLS(t *testing.T, url string, cache tls.ClientSessionCache) bool {
	t.Helper()
	d := ws.Dialer{Timeout: 5 * time.Second, TLSConfig: &tls.Config{InsecureSkipVerify: true, ClientSessionCache: cache}}
	conn, _, _, err := d.Dial(context.Background(), url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().DidResume
}

// reconnectAll dials once with each cache and returns how many resumed.
func reconnectAll(t *testing.T, url string, caches []tlsconf.Session) int {
	t.Helper()
	n := 0
	for i := range caches {
		if dialTLS(t, url, &caches[i]) {
			n++
		}
	}
	return n
}

// A group of two processes: clients resume on either sibling (they share
// the generation's keys), and after an abrupt restart of the group they
// resume only when the ticket keys live in a file kept across it. The
// group's counts add up: every handshake counted once, full or resumed.
func TestGroupTicketKeys(t *testing.T) {
	const clients = 50
	for _, tc := range []struct {
		name    string
		keys    bool
		after   int // resumed after the restart
		version string
	}{
		{name: "keys in memory", after: 0},
		{name: "keys kept in a file", keys: true, after: clients},
		{name: "keys kept, TLS 1.2", keys: true, after: clients, version: tlsconf.Version12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := target.Config{Server: spec.Server{TLS: true, TLSVersion: tc.version}}
			if tc.keys {
				cfg.TLSTicketKeys = filepath.Join(t.TempDir(), "ticket-keys")
			}
			g := startGroup(t, 2, cfg)
			caches := make([]tlsconf.Session, clients)
			if n := reconnectAll(t, g.URL(), caches); n != 0 {
				t.Fatalf("%d first handshakes resumed", n)
			}
			// The kernel spreads new connections over both processes: about
			// half of these land on the sibling of the one that gave the
			// session.
			if n := reconnectAll(t, g.URL(), caches); n != clients {
				t.Fatalf("%d of %d resumed before the restart, want all (siblings share keys)", n, clients)
			}
			ctx := context.Background()
			st, err := g.Stats(ctx)
			if err != nil || st.TLS == nil || st.TLS.Full != clients || st.TLS.Resumed != clients {
				t.Fatalf("group TLS stats %+v, %v; want %d full and %d resumed", st.TLS, err, clients, clients)
			}
			g.Signal(syscall.SIGUSR1) // abrupt
			g.Wait()
			if err := g.Respawn(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if n := reconnectAll(t, g.URL(), caches); n != tc.after {
				t.Errorf("%d of %d resumed after the restart, want %d", n, clients, tc.after)
			}
		})
	}
}
