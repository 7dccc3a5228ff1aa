package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/storm"
)

// defaultLoadgenPolicy is the policy of `stampede loadgen` without --policy.
const defaultLoadgenPolicy = "exp:initial=1s,max=30s,jitter=0.5"

func init() { register(loadgenCmd) }

// loadgenCmd is `stampede loadgen`; run and bench take its fleet flags.
var loadgenCmd = &cli.Command{
	Name:      "loadgen",
	Usage:     "run a fleet of WebSocket clients against any server",
	UsageText: "stampede loadgen --url ws://HOST:PORT/PATH [--clients N] [--ramp R] [--policy SPEC] [--duration D] [flags]",
	Description: "Connects --clients WebSocket clients (epoll reactors, raw sockets) at --ramp clients/s,\n" +
		"holds them for --duration, reconnects them with the backoff --policy whenever the server\n" +
		"drops them, and prints a summary: attempts, failures by class, disconnects, connect\n" +
		"latency, and clients that gave up with their last error. --out DIR also writes\n" +
		"DIR/summary.json and resources.csv, with outages detected from the clients' side.\n" +
		"A fleet larger than one process may hold (about 15,000 connections) runs in several\n" +
		"worker processes, started and collected automatically.\n" +
		"ws:// clients run on epoll reactors (about 200 bytes each); wss:// clients are one\n" +
		"goroutine each with TLS state (several KiB each).",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "server `URL` (ws:// or wss://)", Required: true},
		&cli.IntFlag{Name: "clients", Value: 100, Usage: "number of clients `N`; above 15,000 they run in several worker processes"},
		&cli.IntFlag{Name: "loadgen-procs", Usage: "loadgen processes `N` (0 = as many as the fleet needs; 1 = this process)"},
		&cli.Float64Flag{Name: "ramp", Usage: "first connects per second `R` (0 = all at once, bounded by --max-inflight; run and bench: 90% of --accept-rate when one is set)"},
		&cli.IntFlag{Name: "max-inflight", Usage: "first connects in flight at once `N` (0 = 2000); never limits reconnects"},
		&cli.StringFlag{Name: "policy", Value: defaultLoadgenPolicy, Usage: "reconnect backoff policy `SPEC`"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "run seed `S`: every random draw is reproducible"},
		&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "how long to run `D`"},
		&cli.StringFlag{Name: "source-ips", Usage: "source addresses `LIST`, e.g. 127.0.0.2,127.0.0.3 or 127.0.0.2-127.0.0.9"},
		&cli.DurationFlag{Name: "connect-timeout", Value: loadgen.DefaultConnectTimeout, Usage: "TCP connect deadline `D`"},
		&cli.DurationFlag{Name: "handshake-timeout", Value: loadgen.DefaultHandshakeTimeout, Usage: "deadline `D` from TCP connected to the 101 answer"},
		&cli.IntFlag{Name: "syn-retries", Usage: "TCP_SYNCNT `N` per socket (0 = kernel default)"},
		&cli.BoolFlag{Name: "no-retry-after", Usage: "ignore the server's Retry-After on 429/503 and wait what --policy says (a client that does not honour the header)"},
		&cli.StringFlag{Name: "mode", Value: loadgen.ModeNone, Usage: "message `MODE`: none (hold, answer pings), echo (send, time the echo) or stampede (the message protocol of docs/protocol.md: rooms, ACKs, retry queue, resume)"},
		&cli.Float64Flag{Name: "msg-rate", Value: loadgen.DefaultMsgRate, Usage: "echo or stampede messages per second per client `R`"},
		&cli.IntFlag{Name: "msg-size", Value: loadgen.DefaultMsgSize, Usage: "echo payload `BYTES`"},
		&cli.IntFlag{Name: "rooms", Usage: "stampede mode: rooms `N` of the whole fleet, client i in room i mod N (0 = rooms of 10 consecutive clients)"},
		&cli.BoolFlag{Name: "no-resume", Usage: "stampede mode: after a reconnect rejoin from now instead of resuming (what was sent meanwhile is lost, and counted)"},
		&cli.BoolFlag{Name: "no-retry-queue", Usage: "stampede mode: drop un-ACKed messages at a disconnect instead of resending them (counted as unacked_dropped)"},
		&cli.DurationFlag{Name: "quiet-period", Value: loadgen.DefaultQuietPeriod, Usage: "stampede mode: stop sending `D` before the end, so deliveries land before loss is counted"},
		&headersFlag{cli.GenericFlag{Name: "header", Value: &headerFlag{}, Usage: "upgrade request header `'Name: value'` (repeatable; -H is the same)"}},
		&headersFlag{cli.GenericFlag{Name: "H", Value: &headerFlag{}, Hidden: true}},
		&cli.StringSliceFlag{Name: "subprotocol", Usage: "subprotocol `NAME` to offer (repeatable)"},
		&cli.BoolFlag{Name: "insecure", Usage: "wss://: accept any server certificate (a self-signed target)"},
		&cli.IntFlag{Name: "reactors", Usage: "epoll reactor goroutines `N` (0 = min(GOMAXPROCS, 4))"},
		&cli.DurationFlag{Name: "progress-interval", Aliases: []string{"progress"}, Value: storm.DefaultProgressInterval, Usage: "print live counters to stderr every `D` when it is not a terminal (a terminal gets one status line, redrawn every second; 0 = never)"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics on `ADDR`/metrics while the fleet runs, e.g. 127.0.0.1:9100"},
		&cli.StringFlag{Name: "out", Usage: "write the results folder into `DIR`: summary.json, timeline.csv, *.hlog, resources.csv, kernel.csv, report.html"},
		sloFlag(),
	},
	OnUsageError: func(_ *cli.Context, err error, _ bool) error { return err },
	Action:       loadgenAction,
}

func loadgenAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("loadgen: unexpected argument %q", c.Args().First())
	}
	cfg, err := loadgenConfig(c)
	if err != nil {
		return err
	}
	run := storm.Config{
		Fleet:            cfg,
		LoadgenProcs:     c.Int("loadgen-procs"),
		Duration:         c.Duration("duration"),
		Out:              c.String("out"),
		ProgressInterval: c.Duration("progress-interval"),
		MetricsAddr:      c.String("metrics-addr"),
	}
	if run.ProgressInterval < 0 {
		return fmt.Errorf("--progress-interval must not be negative, got %s", run.ProgressInterval)
	}
	if run.ProgressInterval > 0 {
		run.Log = c.App.ErrWriter
	}
	if run.Duration <= 0 {
		return fmt.Errorf("--duration: must be positive, got %s", run.Duration)
	}
	if run.SLO, err = sloFlagValue(c); err != nil {
		return err
	}
	return runStorm(c, run, func(res *storm.Result) {
		if n, last := res.Report.FirstConnects(); n > 0 && last > 0 {
			fmt.Fprintf(c.App.Writer, "first connects: %d clients within %.3fs of the start (%.0f/s)\n", n, last.Seconds(), float64(n)/last.Seconds())
		}
	})
}

// loadgenConfig maps the flags to a loadgen.Config; a bad value gives an
// error naming its flag.
func loadgenConfig(c *cli.Context) (loadgen.Config, error) {
	cfg, err := fleetConfig(c)
	if err != nil {
		return cfg, err
	}
	pol, err := parsePolicyFlag(c.String("policy"))
	if err != nil {
		return cfg, err
	}
	cfg.URL, cfg.Policy = c.String("url"), pol
	for _, h := range c.Generic("header").(*headerFlag).fields {
		if cfg.Header == nil {
			cfg.Header = http.Header{}
		}
		cfg.Header.Add(h[0], h[1])
	}
	cfg.Protocols = c.StringSlice("subprotocol")
	cfg.TLSInsecure = c.Bool("insecure")
	if err := cfg.Validate(); err != nil {
		return cfg, flagError(err)
	}
	return cfg, nil
}

// parsePolicyFlag parses --policy.
func parsePolicyFlag(spec string) (backoff.Policy, error) {
	pol, err := backoff.Parse(spec)
	if err != nil {
		return pol, fmt.Errorf("--policy: %w", err)
	}
	return pol, nil
}

// fleetConfig maps the fleet flags shared by loadgen, run and bench to a
// loadgen.Config without URL and policy, which each command sets.
func fleetConfig(c *cli.Context) (loadgen.Config, error) {
	ips, err := loadgen.ParseSourceIPs(c.String("source-ips"))
	if err != nil {
		return loadgen.Config{}, fmt.Errorf("--source-ips: %w", err)
	}
	cfg := loadgen.Config{
		Clients:          c.Int("clients"),
		Ramp:             c.Float64("ramp"),
		MaxInflight:      c.Int("max-inflight"),
		Seed:             c.Uint64("seed"),
		SourceIPs:        ips,
		ConnectTimeout:   c.Duration("connect-timeout"),
		HandshakeTimeout: c.Duration("handshake-timeout"),
		SynRetries:       c.Int("syn-retries"),
		NoRetryAfter:     c.Bool("no-retry-after"),
		Mode:             c.String("mode"),
		MsgRate:          c.Float64("msg-rate"),
		Rooms:            c.Int("rooms"),
		NoResume:         c.Bool("no-resume"),
		NoRetryQueue:     c.Bool("no-retry-queue"),
		QuietPeriod:      c.Duration("quiet-period"),
		MsgSize:          c.Int("msg-size"),
		Reactors:         c.Int("reactors"),
	}
	// The message protocol's own flags imply its mode, so that
	// `stampede run --rooms 200` speaks it.
	if !c.IsSet("mode") && (c.IsSet("rooms") || c.Bool("no-resume") || c.Bool("no-retry-queue")) {
		cfg.Mode = loadgen.ModeStampede
	}
	return cfg, nil
}

// loadgenFlags names the flag behind each Config field.
var loadgenFlags = map[string]string{
	"URL": "url", "Clients": "clients", "Ramp": "ramp", "MaxInflight": "max-inflight",
	"ConnectTimeout": "connect-timeout", "HandshakeTimeout": "handshake-timeout",
	"SynRetries": "syn-retries", "Header": "header", "Protocols": "subprotocol", "Mode": "mode",
	"MsgRate": "msg-rate", "MsgSize": "msg-size", "Reactors": "reactors", "SourceIPs": "source-ips",
	"Rooms": "rooms", "QuietPeriod": "quiet-period", "NoResume": "no-resume", "NoRetryQueue": "no-retry-queue",
}
