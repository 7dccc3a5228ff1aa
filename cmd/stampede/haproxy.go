package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// haproxySocketFlag is --haproxy-socket of the commands that drill a
// server through HAProxy (loadgen, drill).
var haproxySocketFlag = &cli.StringSliceFlag{
	Name: "haproxy-socket",
	Usage: "HAProxy runtime API socket `PATH` (repeatable; a glob such as DIR/haproxy-*.sock names every instance): " +
		"its counters (sessions, queue, 5xx, retries per server) go to haproxy.csv and summary.json \"haproxy\"",
}

// haproxySockets expands --haproxy-socket: globs to the sockets they
// match (one that matches nothing is an error naming it), duplicates
// dropped.
func haproxySockets(c *cli.Context) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, v := range c.StringSlice("haproxy-socket") {
		paths := []string{v}
		if strings.ContainsAny(v, "*?[") {
			m, err := filepath.Glob(v)
			if err != nil {
				return nil, fmt.Errorf("--haproxy-socket %q: %w", v, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("--haproxy-socket %q: matches no file", v)
			}
			paths = m
		}
		for _, p := range paths {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}
