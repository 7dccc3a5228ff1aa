package loadgen

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/stampede-dev/stampede/internal/redact"
)

// TLSConfig returns the TLS settings of the fleet's wss:// clients: the
// system roots or TLSCAFile's CAs, the client certificate of
// TLSCertFile/TLSKeyFile, SNI from TLSServerName (else the URL's host, which
// the dialer fills in), and no verification at all with TLSInsecure. A file
// that cannot be read or parsed is a *ConfigError naming its field.
func (c Config) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: c.TLSInsecure, ServerName: c.TLSServerName}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, bad("TLSCAFile", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad("TLSCAFile", "%s holds no PEM certificate", c.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return nil, bad("TLSCertFile", "a client certificate needs both its certificate and its key file")
	case c.TLSCertFile != "":
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, bad("TLSCertFile", "%v", fmt.Errorf("loading %s and %s: %w", c.TLSCertFile, c.TLSKeyFile, err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Redacted returns the Config with its secrets hidden, for anything that is
// written or printed (summary.json's config, logs): the values of secret
// headers (Authorization, Cookie, Proxy-Authorization and SecretHeaders)
// and the URL's user info appear as redact.Mark. The fleet itself runs on
// the original; a plan for an agent carries the original over its stdin,
// never a command line.
func (c Config) Redacted() Config {
	c.URL = redact.URLWith(c.URL, c.SecretHeaders)
	c.Header = redact.Header(c.Header, c.SecretHeaders)
	return c
}
