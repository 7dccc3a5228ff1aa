package drill

import (
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
)

// Config describes one drill. Run.Fleet.URL, Run.Fleet.Clients and
// Run.Duration are required, and exactly one of RestartCmd and
// WaitForOutage.
type Config struct {
	// Run is the fleet against the user's server (Run.Fleet.URL), its
	// length, results folder (private, as every one) and SLO gates.
	Run storm.Config
	// AllowRemote names the hosts besides loopback addresses that the
	// drill may send load to (--allow-remote); the URL's host must be
	// loopback (127.0.0.0/8, ::1, localhost) or one of these, exactly.
	AllowRemote []string
	// RestartCmd is the deploy command, run by /bin/sh at At (read from a
	// pipe, never given as an argument: Deploy).
	RestartCmd string
	// At is when RestartCmd starts, from the start barrier; it must fall
	// inside Run.Duration.
	At time.Duration
	// CommandTimeout bounds RestartCmd; zero means until the run's end.
	// A command still running then is killed and fails the drill.
	CommandTimeout time.Duration
	// WaitForOutage runs no command: the user deploys by hand during the
	// run, and the outage must be detected from the clients' side.
	WaitForOutage bool
	// MinConnected is the share of Run.Fleet.Clients (above 0, at most 1)
	// that must be connected before the deploy: at At for RestartCmd
	// (the drill stops, and the command never runs, when the share is
	// not reached), or by the end of the ramp and HandDeployGrace for
	// WaitForOutage. Zero means DefaultMinConnected.
	MinConnected float64
	// Abort, when closed after the drill's context ended (a second
	// Ctrl-C), stops a deploy command the drill is letting finish
	// (Deploy.Abort); nil means it runs to its bound.
	Abort <-chan struct{}
	// JUnit, when set, is the path of the JUnit XML file written at the
	// end (--junit).
	JUnit string
	// Sidecars are extra collectors that run beside the fleet and write
	// into the results folder (a load balancer's counters): see
	// storm.Sidecar. The deploy command is one already.
	Sidecars []storm.Sidecar
	// Log receives the banner, warnings and the deploy command's output
	// lines; nil means none.
	Log io.Writer
}

// Validate reports the first unusable field as a *spec.FieldError, without
// opening a socket or starting a process.
func (c *Config) Validate() error {
	if c.Run.Fleet.URL == "" {
		return spec.Errorf("Client.URL", "required")
	}
	if err := CheckTarget(c.Run.Fleet.URL, c.AllowRemote); err != nil {
		return err
	}
	switch {
	case c.RestartCmd == "" && !c.WaitForOutage:
		return spec.Errorf("Drill.RestartCmd", "{Drill.RestartCmd} or {Drill.WaitForOutage}: one is required (what deploys during the drill?)")
	case c.RestartCmd != "" && c.WaitForOutage:
		return spec.Errorf("Drill.RestartCmd", "{Drill.RestartCmd} and {Drill.WaitForOutage}: give one, not both")
	case c.At < 0:
		return spec.Errorf("Drill.At", "must not be negative, got %s", c.At)
	case c.RestartCmd != "" && c.At >= c.Run.Duration:
		return spec.Errorf("Drill.At", "%s must fall inside {Storm.Duration} %s", c.At, c.Run.Duration)
	case c.RestartCmd == "" && c.At != 0:
		return spec.Errorf("Drill.At", "only with {Drill.RestartCmd}")
	case c.MinConnected < 0 || c.MinConnected > 1 || c.MinConnected != c.MinConnected:
		return spec.Errorf("Drill.MinConnected", "a share of the clients above 0 and at most 100%%, got %g", c.MinConnected)
	case c.CommandTimeout < 0:
		return spec.Errorf("Drill.CommandTimeout", "must not be negative, got %s", c.CommandTimeout)
	}
	if c.JUnit != "" {
		if err := folder.CheckFile(c.JUnit); err != nil {
			return spec.Wrap("Drill.JUnit", err)
		}
	}
	return c.Run.Validate()
}

// CheckTarget refuses a URL whose host is not loopback unless allow names
// that host exactly (--allow-remote HOST). It resolves no name and opens
// no socket: a host name other than localhost counts as remote whatever it
// resolves to, since the answer could change between this check and the
// connects.
func CheckTarget(rawURL string, allow []string) error {
	if spec.NoScheme(rawURL) {
		return spec.SchemeHint("Client.URL", rawURL, "ws")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return spec.Errorf("Client.URL", "%q does not parse", redact.URL(rawURL))
	}
	host := u.Hostname()
	if host == "" {
		return spec.Errorf("Client.URL", "no host in %q", redact.URL(rawURL))
	}
	if IsLoopback(host) {
		return nil
	}
	if slices.ContainsFunc(allow, func(a string) bool { return strings.EqualFold(strings.Trim(a, "[]"), host) }) {
		return nil
	}
	return spec.Errorf("Client.URL", "%s: host %s is not loopback; a drill sends load to another host only when {Drill.AllowRemote} %s names it",
		redact.URL(rawURL), host, host)
}

// IsLoopback reports whether host (a URL's host, without port or
// brackets) is a loopback address or localhost.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
