package target

import (
	"fmt"
	"os"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
)

// TicketKeysEnv names the environment variable through which a Group hands
// its processes the session-ticket key file they share when
// Config.TLSTicketKeys is empty: the keys of one generation, drawn anew at
// each Respawn, so a restart of the group loses them as a restart of a
// server that keeps them in memory does, while a reconnect landing on a
// sibling process still resumes.
const TicketKeysEnv = "STAMPEDE_TLS_TICKET_KEYS"

// serverTLS returns the TLS of a wss:// server (package tlsconf).
func serverTLS(c spec.Server) (*tlsconf.Server, error) {
	keys := c.TLSTicketKeys
	if keys == "" {
		keys = os.Getenv(TicketKeysEnv)
	}
	t, err := tlsconf.NewServer(tlsconf.ServerOptions{
		CertFile: c.CertFile, KeyFile: c.KeyFile, Kind: tlsconf.Kind(c.TLSCertKind),
		MaxVersion: c.TLSVersion, NoTickets: c.TLSNoTickets, TicketKeys: keys, Rotate: c.TLSTicketRotate,
	})
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	return t, nil
}
