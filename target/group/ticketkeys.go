package group

import (
	"fmt"
	"os"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// groupTicketKeys creates the ticket-key file a group's processes share
// when cfg keeps its keys in memory (target.TicketKeysEnv), and returns its path;
// "" when cfg has no tickets to share.
func groupTicketKeys(cfg spec.Server) (string, error) {
	if c := cfg.WithDefaults(); !c.TLS || c.TLSNoTickets || c.TLSTicketKeys != "" {
		return "", nil
	}
	f, err := os.CreateTemp("", "stampede-ticket-keys-*")
	if err != nil {
		return "", fmt.Errorf("target: ticket keys: %w", err)
	}
	return f.Name(), f.Close()
}

// forgetTicketKeys empties a group's ticket-key file before a new
// generation starts: its first process draws a new key.
func forgetTicketKeys(path string) error {
	if path == "" {
		return nil
	}
	return os.Truncate(path, 0)
}

// ticketKeysEnv is the environment entry that hands path to a process.
func ticketKeysEnv(path string) []string {
	if path == "" {
		return nil
	}
	return []string{target.TicketKeysEnv + "=" + path}
}

// removeIf removes the file at path, if any.
func removeIf(path string) error {
	if path == "" {
		return nil
	}
	return os.Remove(path)
}
