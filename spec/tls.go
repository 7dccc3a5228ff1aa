package spec

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// TLSGroupNames are the key exchange groups a fleet may offer
// (Client.TLSGroups), by their names in the IANA registry, lower case.
var TLSGroupNames = map[string]tls.CurveID{
	"x25519mlkem768":     tls.X25519MLKEM768,
	"secp256r1mlkem768":  tls.SecP256r1MLKEM768,
	"secp384r1mlkem1024": tls.SecP384r1MLKEM1024,
	"x25519":             tls.X25519,
	"secp256r1":          tls.CurveP256,
	"secp384r1":          tls.CurveP384,
	"secp521r1":          tls.CurveP521,
}

// TLSConfig returns the TLS settings of the fleet's wss:// clients: the
// system roots or TLSCAFile's CAs, the client certificate of
// TLSCertFile/TLSKeyFile, SNI from TLSServerName (else the URL's host,
// which the dialer fills in), the key exchange groups of TLSGroups, and
// no verification at all with TLSInsecure. A file that cannot be read
// or parsed, or a group not in TLSGroupNames, is a *FieldError naming
// its field.
func (c Client) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: c.TLSInsecure, ServerName: c.TLSServerName}
	for _, g := range c.TLSGroups {
		id, ok := TLSGroupNames[strings.ToLower(strings.TrimSpace(g))]
		if !ok {
			return nil, Errorf("Client.TLSGroups", "unknown key exchange group %q (known: %s)", g, strings.Join(slices.Sorted(maps.Keys(TLSGroupNames)), ", "))
		}
		tc.CurvePreferences = append(tc.CurvePreferences, id)
	}
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
