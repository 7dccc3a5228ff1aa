package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
)

// targetCmd is `stampede target`. Its flag names are also what
// target.Config.Flags renders for group children; the round trip is tested.
var targetCmd = &cli.Command{
	Name:      "target",
	Usage:     "run the WebSocket server a reconnect storm is aimed at",
	UsageText: "stampede target [--addr IP:PORT] [--backlog N] [--accept-rate R] [--hold D] [--tls] [--procs N] ...",
	Description: "An echo WebSocket server on an epoll reactor whose capacity is a set of knobs: an explicit\n" +
		"listen backlog, an accept rate, CPU per handshake, a connection cap answered 503 with\n" +
		"Retry-After. When it starts accepting it prints one JSON line on stdout:\n" +
		`  {"ready":true,"addr":"127.0.0.1:PORT","pid":N,"control":"127.0.0.1:CPORT","t":"..."}` + "\n" +
		"SIGTERM sends close 1001 to every client and exits 0; SIGUSR1 closes everything without\n" +
		"close frames (clients see 1006) and exits 0. The HTTP control API on --control-addr takes\n" +
		"POST /stall?for=3s, /backlog?n=16, /accept-rate?r=500,\n" +
		"/reject?status=503&retry_after=2s&for=3s, /shutdown?mode=graceful|abrupt and GET /stats.\n" +
		"--procs N runs N processes on one port (SO_REUSEPORT); signals and control requests go to all.\n" +
		"--store URL makes it speak the message protocol (msg/ack/deliver, join, resume) instead of echo;\n" +
		"the store keeps messages across restarts (one process per store).\n" +
		"Requests to " + target.HTTPPath + " (any method) are plain HTTP: 200 under --http-limit, else\n" +
		"--limit-status with Retry-After; a repeated Idempotency-Key's 200 says Idempotent-Replayed: true.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: target.DefaultAddr, Usage: "listen address `IP:PORT` (port 0: a free one; IPv6 as [::1]:PORT)"},
		&cli.IntFlag{Name: "backlog", Value: target.DefaultBacklog, Usage: "listen backlog `N`: the accept queue holds N+1 (capped by net.core.somaxconn)"},
		&cli.Float64Flag{Name: "accept-rate", Usage: "accepts per second `R` (0 = unlimited); above it the backlog fills"},
		&cli.IntFlag{Name: "accept-burst", DefaultText: "0, 10 ms worth of --accept-rate, at least 1", Usage: "accepts `N` allowed at once under --accept-rate"},
		&cli.DurationFlag{Name: "handshake-cost", Usage: "CPU time `D` burned per admitted upgrade, standing in for TLS and auth"},
		&cli.DurationFlag{Name: "handshake-timeout", Value: target.DefaultHandshakeTimeout, Usage: "limit `D` on the TLS handshake plus the upgrade"},
		&cli.BoolFlag{Name: "tls", Usage: "serve wss:// with a self-signed certificate for 127.0.0.1, ::1 and localhost"},
		&cli.StringFlag{Name: "cert", Usage: "PEM certificate `FILE` to serve wss:// with (with --key)"},
		&cli.StringFlag{Name: "key", Usage: "PEM private key `FILE` of --cert"},
		&cli.IntFlag{Name: "max-conns", Usage: "open connections `N` above which upgrades are answered 503 (0 = no cap)"},
		&cli.DurationFlag{Name: "reject-retry-after", Value: target.DefaultRejectRetryAfter, Usage: "Retry-After `D` sent with a --max-conns rejection (whole seconds)"},
		&cli.Float64Flag{Name: "http-limit", Usage: "requests per second `R` the HTTP endpoint " + target.HTTPPath + " answers 200 (token bucket; 0 = no limit); above it --limit-status"},
		&cli.IntFlag{Name: "http-burst", DefaultText: "0, 100 ms worth of --http-limit, at least 1", Usage: "requests `N` answered 200 at once under --http-limit"},
		&cli.IntFlag{Name: "limit-status", Value: target.DefaultLimitStatus, Usage: "status `CODE` above --http-limit: 429, 503 or 529"},
		&cli.DurationFlag{Name: "retry-after", Value: target.DefaultLimitRetryAfter, Usage: "Retry-After `D` sent with --limit-status (whole seconds, rounded up)"},
		&cli.DurationFlag{Name: "hold", Usage: "listen at once but accept nothing for `D` (port open, backlog fills, SYNs time out)"},
		&cli.StringFlag{Name: "store", Usage: "speak the message protocol (docs/protocol.md) on the store at `URL`: jetstream:///DIR (NATS JetStream embedded, run by the group's owner and shared by its --procs; what run --mode stampede uses for several target processes), file:///DIR or DIR (embedded log, one process; what run uses for one), redis://127.0.0.1:6379/0, postgres://USER@127.0.0.1:5432/DB, nats://HOST:PORT; fsync before ACK for the embedded ones; empty: echo"},
		&cli.BoolFlag{Name: "no-dedupe", Usage: "store and deliver a resent message again under a new seq (shows what dedupe prevents; needs --store)"},
		&cli.IntFlag{Name: "retention", DefaultText: fmt.Sprint(store.DefaultRetention), Usage: "messages `N` per room the store keeps for resume (needs --store)"},
		&cli.IntFlag{Name: "procs", Value: 1, Usage: "server processes `N` on one port (one process holds about " + thousands(storm.PerProcess) + " connections here)"},
		&cli.StringFlag{Name: "control-addr", Value: "127.0.0.1:0", Usage: "address `IP:PORT` of the HTTP control API"},
	},
	Action: targetAction,
}

func init() { register(targetCmd) }

// targetAction maps the flags to a target.RunConfig and runs the target
// until it is shut down.
func targetAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("target: unexpected argument %q", c.Args().First())
	}
	rc := target.RunConfig{
		Server:      targetConfig(c),
		ControlAddr: c.String("control-addr"),
		Procs:       c.Int("procs"),
		Stdout:      c.App.Writer,
		Exit:        os.Exit,
	}
	if rc.Procs > 1 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("target: finding the stampede binary for --procs: %w", err)
		}
		rc.Spawn = cluster.SpawnServer(exe, []string{"agent"}, c.App.ErrWriter)
	}
	if err := rc.Validate(); err != nil {
		return flagError(err)
	}
	return flagError(target.Run(c.Context, rc))
}

// targetConfig maps the server flags to a target.Config.
func targetConfig(c *cli.Context) target.Config {
	return target.Config{
		Addr:             c.String("addr"),
		Backlog:          c.Int("backlog"),
		AcceptRate:       c.Float64("accept-rate"),
		AcceptBurst:      c.Int("accept-burst"),
		HandshakeCost:    c.Duration("handshake-cost"),
		HandshakeTimeout: c.Duration("handshake-timeout"),
		TLS:              c.Bool("tls"),
		CertFile:         c.String("cert"),
		KeyFile:          c.String("key"),
		MaxConns:         c.Int("max-conns"),
		RejectRetryAfter: c.Duration("reject-retry-after"),
		Hold:             c.Duration("hold"),
		HTTPLimit:        c.Float64("http-limit"),
		HTTPBurst:        c.Int("http-burst"),
		LimitStatus:      c.Int("limit-status"),
		LimitRetryAfter:  c.Duration("retry-after"),
		Store:            c.String("store"),
		NoDedupe:         c.Bool("no-dedupe"),
		Retention:        c.Int("retention"),
	}
}

// configFlags names the flag of each target.Config (and RunConfig) field
// a ConfigError can point at.
var configFlags = map[string]string{
	"Addr": "addr", "Backlog": "backlog", "AcceptRate": "accept-rate", "AcceptBurst": "accept-burst",
	"HandshakeCost": "handshake-cost", "HandshakeTimeout": "handshake-timeout", "CertFile": "cert",
	"MaxConns": "max-conns", "RejectRetryAfter": "reject-retry-after", "Hold": "hold", "Procs": "procs",
	"Store": "store", "Retention": "retention", "HTTPLimit": "http-limit", "HTTPBurst": "http-burst",
	"LimitStatus": "limit-status", "LimitRetryAfter": "retry-after",
}
