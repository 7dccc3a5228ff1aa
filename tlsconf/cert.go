package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Kind is a kind of certificate key: what the server signs each full
// handshake with, the largest part of its cost.
type Kind string

// The certificate kinds a server generates. ECDSA P-256 is what most
// public sites serve today; RSA-2048 costs several times more CPU per
// full handshake; RSA-4096 several times more again.
const (
	ECDSAP256 Kind = "ecdsa-p256"
	RSA2048   Kind = "rsa-2048"
	RSA4096   Kind = "rsa-4096"
)

// Kinds lists every Kind, cheapest first.
var Kinds = []Kind{ECDSAP256, RSA2048, RSA4096}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, v := range Kinds {
		if k == v {
			return true
		}
	}
	return false
}

// newKey draws a private key of kind k.
func newKey(k Kind) (crypto.Signer, error) {
	switch k {
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case RSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	}
	return nil, fmt.Errorf("tlsconf: unknown certificate kind %q (want %v)", k, Kinds)
}

// SelfSigned returns a fresh self-signed certificate of kind k for
// 127.0.0.1, ::1 and localhost, valid from an hour ago for a year. Clients
// must skip verification or trust its Leaf. An RSA-4096 key takes a second
// or more to draw.
func SelfSigned(k Kind) (tls.Certificate, error) {
	key, err := newKey(k)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	usage := x509.KeyUsageDigitalSignature
	if k != ECDSAP256 {
		usage |= x509.KeyUsageKeyEncipherment
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"stampede target"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              usage,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
