package spec

import "github.com/stampede-dev/stampede/tlsconf"

// validateTLS checks the TLS fields of a Server.
func (c Server) validateTLS() error {
	bad := func(field, format string, a ...any) error { return Errorf("Server."+field, format, a...) }
	switch {
	case c.TLSCertKind != "" && !tlsconf.Kind(c.TLSCertKind).Valid():
		return bad("TLSCertKind", "%q is not one of %v", c.TLSCertKind, tlsconf.Kinds)
	case c.TLSCertKind != "" && c.CertFile != "":
		return bad("TLSCertKind", "a generated certificate's kind, not with {Server.CertFile}")
	case c.TLSVersion != "" && c.TLSVersion != tlsconf.Version12 && c.TLSVersion != tlsconf.Version13:
		return bad("TLSVersion", "%q must be %s or %s", c.TLSVersion, tlsconf.Version12, tlsconf.Version13)
	case c.TLSNoTickets && c.TLSTicketKeys != "":
		return bad("TLSTicketKeys", "needs session tickets (not with {Server.TLSNoTickets})")
	case c.TLSTicketRotate < 0:
		return bad("TLSTicketRotate", "%v must not be negative", c.TLSTicketRotate)
	case c.TLSTicketRotate > 0 && c.TLSTicketKeys == "":
		return bad("TLSTicketRotate", "rotates the keys of {Server.TLSTicketKeys}, which is not set")
	}
	return nil
}
