package hub

import (
	"context"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testpki"
)

// TestTLS: with --tls-cert/--tls-key/--ca the embedded server speaks TLS
// and asks for client certificates: an agent with the CA and a certificate
// joins (the hub sees it, with its clock offset); one without the CA cannot
// verify the server and never joins; one with the CA but no certificate is
// refused by the server.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	pki := testpki.Write(t, dir, net.IPv4(127, 0, 0, 1), x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	ca, cert, key := pki.CA, pki.Cert, pki.Key
	h := newHub(t, Config{TLSCert: cert, TLSKey: key, CA: ca})
	if !strings.HasPrefix(h.URL(), "tls://") {
		t.Fatalf("hub URL %q, want tls://", h.URL())
	}
	tok, err := ReadToken(h.cfg.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name      string
		ca, cert  string
		wantInErr string
	}{
		{name: "no CA", cert: cert, wantInErr: "certificate"},
		{name: "no client certificate", ca: ca, wantInErr: ""},
	} {
		cfg := JoinConfig{NATS: h.URL(), Token: tok, Name: "bad", Role: RoleLoadgen, JoinTimeout: 2 * time.Second, CA: tc.ca}
		if tc.cert != "" {
			cfg.TLSCert, cfg.TLSKey = tc.cert, key
		}
		if j, err := Join(ctx, cfg); err == nil {
			j.Leave()
			t.Errorf("%s: joined, want the TLS handshake to fail", tc.name)
		} else if !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("%s: %v, want it to mention %q", tc.name, err, tc.wantInErr)
		}
	}

	joined := make(chan error, 1)
	go func() {
		j, err := Join(ctx, JoinConfig{NATS: h.URL(), Token: tok, Name: "good", Role: RoleLoadgen, Capacity: 10,
			JoinTimeout: 20 * time.Second, CA: ca, TLSCert: cert, TLSKey: key})
		if err == nil {
			defer j.Leave()
			<-ctx.Done()
		}
		joined <- err
	}()
	members, err := h.Wait(ctx, 1, 20*time.Second)
	if err != nil {
		t.Fatalf("agent with the CA and a certificate: %v", err)
	}
	if m := members[0]; m.Name != "good" || m.OffsetError <= 0 {
		t.Errorf("member %q with offset bound %v, want good with a positive bound", m.Name, m.OffsetError)
	}
	cancel()
	if err := <-joined; err != nil {
		t.Errorf("join over TLS: %v", err)
	}
}
