package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/target"
)

// testPKI is a CA made for one test, a server certificate it signed for
// 127.0.0.1 and staging.test, and a client certificate, as PEM files.
type testPKI struct {
	caFile, certFile, keyFile, clientCert, clientKey string
	pool                                             *x509.CertPool
	server                                           tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stampede test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &testPKI{caFile: write("ca.pem", "CERTIFICATE", caDER), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certFile, keyFile string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kder)
	}
	p.certFile, p.keyFile = leaf(2, "server", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"staging.test"})
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth, nil, nil)
	if p.server, err = tls.LoadX509KeyPair(p.certFile, p.keyFile); err != nil {
		t.Fatal(err)
	}
	return p
}

// tlsFront is a TLS listener in front of the bundled target (plain ws://),
// as a load balancer terminating TLS is: it relays each connection's bytes
// once the handshake is done, asks for a client certificate signed by the
// test CA when clientAuth is set, and notes the SNI names it was sent.
type tlsFront struct {
	url string
	mu  sync.Mutex
	sni map[string]int
}

func newTLSFront(t *testing.T, pki *testPKI, clientAuth bool) *tlsFront {
	t.Helper()
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	f := &tlsFront{sni: map[string]int{}}
	cfg := &tls.Config{Certificates: []tls.Certificate{pki.server}, GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		f.mu.Lock()
		f.sni[h.ServerName]++
		f.mu.Unlock()
		return nil, nil
	}}
	if clientAuth {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pki.pool
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	upstream := srv.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				u, err := net.Dial("tcp", upstream)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { io.Copy(u, c); u.Close() }()
				io.Copy(c, u)
			}()
		}
	}()
	f.url = "wss://" + ln.Addr().String() + "/ws"
	return f
}

// TestDrillTLS: wss:// against a server whose certificate a test CA
// signed: it works with --ca, fails as class tls without it (the system
// roots do not know the CA), works with --insecure and a warning; SNI is
// the URL's host or --server-name; a server that asks for a client
// certificate gets --cert/--key.
func TestDrillTLS(t *testing.T) {
	const clients = 5
	pki := newTestPKI(t)
	front := newTLSFront(t, pki, false)
	mtls := newTLSFront(t, pki, true)
	for _, tc := range []struct {
		name     string
		url      string
		args     []string
		code     int
		class    string // the class every client failed with; "" for none
		warning  bool
		sni      string
		frontSNI *tlsFront
	}{
		{name: "ca", url: front.url, args: []string{"--ca", pki.caFile}},
		{name: "system roots", url: front.url, code: 1, class: "tls"},
		{name: "insecure", url: front.url, args: []string{"--insecure"}, warning: true},
		{name: "server name", url: front.url, args: []string{"--ca", pki.caFile, "--server-name", "staging.test"}, sni: "staging.test", frontSNI: front},
		{name: "wrong server name", url: front.url, args: []string{"--ca", pki.caFile, "--server-name", "other.test"}, code: 1, class: "tls"},
		{name: "no client certificate", url: mtls.url, args: []string{"--ca", pki.caFile}, code: 1, class: "tls"},
		{name: "client certificate", url: mtls.url, args: []string{"--ca", pki.caFile, "--cert", pki.clientCert, "--key", pki.clientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"--url", tc.url, "--clients", itoa(clients), "--duration", "2s", "--restart-cmd", "true", "--at", "100ms",
				"--policy", "fixed:initial=200ms", "--slo", "failures==0", "--out", out, "--progress", "0"}, tc.args...)
			code, stdout, stderr := runDrill(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			s := readDrillSummary(t, out)
			if tc.class == "" && s.Connect.Successes < clients {
				t.Errorf("%d successes, want %d; failures %v", s.Connect.Successes, clients, s.Connect.Failures)
			}
			if tc.class != "" && (s.Connect.Successes != 0 || s.Connect.Failures[tc.class] != clients) {
				t.Errorf("successes %d failures %v; want every client failed as %s once (not retried)", s.Connect.Successes, s.Connect.Failures, tc.class)
			}
			if got := strings.Count(stderr, drill.InsecureWarning); (got > 0) != tc.warning {
				t.Errorf("the --insecure warning printed %d times:\n%s", got, stderr)
			}
			if tc.frontSNI != nil {
				tc.frontSNI.mu.Lock()
				n := tc.frontSNI.sni[tc.sni]
				tc.frontSNI.mu.Unlock()
				if n < clients {
					t.Errorf("SNI %q sent %d times, want %d", tc.sni, n, clients)
				}
			}
		})
	}
}
