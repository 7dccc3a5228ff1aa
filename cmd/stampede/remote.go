package main

import (
	"fmt"
	"net/url"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/internal/redact"
)

// allowRemoteFlag lets a command that sends load to a URL send it to a
// host other than loopback.
var allowRemoteFlag = &cli.StringSliceFlag{Name: "allow-remote", Usage: "allow load to `HOST` (exactly the URL's host) although it is not loopback (repeatable)"}

// refuseRemote applies the drill's rule (drill.CheckTarget) to the URL
// given as what (a flag, or "http URL" for an argument): load goes to a
// host other than loopback only when --allow-remote names it. It
// resolves no name and opens no socket; a URL that does not parse is left
// to the command's own check.
func refuseRemote(c *cli.Context, what, raw string) error {
	if drill.CheckTarget(raw, c.StringSlice("allow-remote")) == nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil // not a URL with a host: the command's own check says so
	}
	h := u.Hostname()
	return fmt.Errorf("%s %s: host %s is not loopback; load goes to another host only when --allow-remote %s names it", what, redact.URL(raw), h, h)
}
