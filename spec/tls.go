package spec

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSConfig returns the TLS settings of the fleet's wss:// clients: the
// system roots or TLSCAFile's CAs, the client certificate of
// TLSCertFile/TLSKeyFile, SNI from TLSServerName (else the URL's host,
// which the dialer fills in), and no verification at all with
// TLSInsecure. A file that cannot be read or parsed is a *FieldError
// naming its field.
func (c Client) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: c.TLSInsecure, ServerName: c.TLSServerName}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, Errorf("Client.TLSCAFile", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, Errorf("Client.TLSCAFile", "%s holds no PEM certificate", c.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return nil, Errorf("Client.TLSCertFile", "a client certificate needs both its certificate and its key file")
	case c.TLSCertFile != "":
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, Errorf("Client.TLSCertFile", "%v", fmt.Errorf("loading %s and %s: %w", c.TLSCertFile, c.TLSKeyFile, err))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
