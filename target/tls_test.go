package target

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/spec"
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

// Session tickets off: nothing resumes, and every handshake counts full.
func TestServerNoTickets(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{TLS: true, TLSNoTickets: true, TLSCertKind: string(tlsconf.RSA2048)}})
	var cache tlsconf.Session
	for range 3 {
		if dialTLS(t, s.URL(), &cache) {
			t.Fatal("resumed with tickets off")
		}
	}
	if st := s.Stats(); st.TLS == nil || st.TLS.Full != 3 || st.TLS.Resumed != 0 || st.TLS.FullCPUNS == 0 {
		t.Errorf("stats %+v, want 3 full with their CPU", st.TLS)
	}
}
