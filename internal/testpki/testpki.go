// Package testpki writes a throwaway certificate authority and one leaf
// certificate for tests that need TLS with a CA: the hub's NATS server,
// the coordinator on a namespace host. It is for tests only; the keys are
// fresh on every call and valid for an hour.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files Write wrote.
type Files struct {
	CA, Cert, Key string
}

// Write writes into dir a CA (ca.pem) and a leaf certificate (cert.pem,
// key.pem) it signed for ip, with the given extended key usages (server
// authentication when none), and returns their paths.
func Write(t testing.TB, dir string, ip net.IP, usage ...x509.ExtKeyUsage) Files {
	t.Helper()
	if len(usage) == 0 {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stampede test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "stampede test"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{ip},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Files{
		CA:   write("ca.pem", "CERTIFICATE", caDER),
		Cert: write("cert.pem", "CERTIFICATE", leafDER),
		Key:  write("key.pem", "EC PRIVATE KEY", keyDER),
	}
}
