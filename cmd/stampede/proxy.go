package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/proxy"
)

// proxyCmd is `stampede proxy`.
var proxyCmd = &cli.Command{
	Name:      "proxy",
	Usage:     "run the TCP fault proxy in front of any server",
	UsageText: "stampede proxy --listen IP:PORT --upstream HOST:PORT [--procs N] [--fault WORDS] [--chaos SCHEDULE --duration D]",
	Description: "Relays every TCP connection made to --listen to --upstream, and injects network faults\n" +
		"on command: latency=D [jitter=D] (each direction), bandwidth=R (each direction of each\n" +
		"connection), loss=P% (connections dropped), reset (RST every connection), blackhole\n" +
		"(swallow everything, close nothing). With no fault active it adds well under 1 ms.\n" +
		"When it accepts it prints one JSON line on stdout:\n" +
		`  {"ready":true,"addr":"127.0.0.1:PORT","pid":N,"control":"127.0.0.1:CPORT","token":"TOKEN","t":"..."}` + "\n" +
		"Faults come from --fault (at start), --chaos (proxy events on a time axis from the ready\n" +
		"line, e.g. 'at 5s proxy latency=200ms for 10s') or the HTTP control API on --control-addr,\n" +
		"each request with the ready line's token (else 401; docs/cli.md \"Control API\"):\n" +
		"  curl -H 'Authorization: Bearer TOKEN' -X POST 'http://127.0.0.1:CPORT/fault?latency=200ms&jitter=20ms'\n" +
		"  curl -H 'Authorization: Bearer TOKEN' -X DELETE http://127.0.0.1:CPORT/fault\n" +
		"  curl -H 'Authorization: Bearer TOKEN' http://127.0.0.1:CPORT/stats\n" +
		"Each connection takes two open files; one process relays up to about 7,500, so --procs N\n" +
		"runs N processes on one port (SO_REUSEPORT) and the control API reaches all of them.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: proxy.DefaultListen, Usage: "address `IP:PORT` clients connect to (port 0: a free one)"},
		&cli.StringFlag{Name: "upstream", Usage: "server `HOST:PORT` every connection is relayed to (required)"},
		&cli.IntFlag{Name: "procs", Value: 1, Usage: "proxy processes `N` on one port (each relays up to ~7,500 connections)"},
		&cli.IntFlag{Name: "reactors", Usage: "epoll reactor goroutines `N` per process, each with its own listener (0 = 1)"},
		&cli.IntFlag{Name: "backlog", Value: proxy.DefaultBacklog, Usage: "listen backlog `N` of each listener"},
		&cli.IntFlag{Name: "max-conns", Usage: "connections `N` per process above which new ones are reset (0 = what the open-file limit allows)"},
		&cli.DurationFlag{Name: "connect-timeout", Value: proxy.DefaultConnectTimeout, Usage: "upstream connect deadline `D`; the client is reset after it"},
		&cli.BoolFlag{Name: "keep-listening", Usage: "keep the port open while the upstream refuses, resetting clients (otherwise they are refused too)"},
		&cli.StringFlag{Name: "source-ip", Usage: "local `IP` of upstream connections (its own ephemeral port range)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S` of the jitter and loss draws"},
		&cli.IntFlag{Name: "proc", Hidden: true, Usage: "this process's index in a group"},
		&cli.StringFlag{Name: "control-addr", Value: "127.0.0.1:0", Usage: "address `IP:PORT` of the HTTP control API"},
		&cli.StringFlag{Name: "fault", Usage: "faults `WORDS` active from the start, e.g. 'latency=50ms jitter=10ms'"},
		&cli.StringFlag{Name: "chaos", Usage: "schedule `SCHEDULE` of proxy events, e.g. 'at 5s proxy latency=200ms for 10s'"},
		&cli.StringFlag{Name: "chaos-file", Usage: "read the schedule from `FILE`"},
		&cli.DurationFlag{Name: "duration", Usage: "stop after `D` (0 = on SIGINT or SIGTERM)"},
	},
	Before: requireFlags("upstream"),
	Action: proxyAction,
}

func init() { register(proxyCmd) }

// proxyAction maps the flags to a proxy.RunConfig and runs the proxy
// until the duration ends or a signal arrives.
func proxyAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("proxy: unexpected argument %q", c.Args().First())
	}
	pc, err := proxyConfig(c)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("proxy: finding the stampede binary: %w", err)
	}
	rc := proxy.RunConfig{
		Proxy:       pc,
		Procs:       c.Int("procs"),
		ControlAddr: c.String("control-addr"),
		Duration:    c.Duration("duration"),
		Stdout:      c.App.Writer,
		Log:         c.App.ErrWriter,
		Spawn:       agent.SpawnRelay(exe, []string{"agent"}, c.App.ErrWriter),
	}
	fault, err := chaos.ParseProxyFault(c.String("fault"))
	if err != nil {
		return fmt.Errorf("--fault: %w", err)
	}
	sched, err := scheduleFlag(c)
	if err != nil {
		return err
	}
	rc.Schedule = sched
	if err := rc.Validate(); err != nil {
		return flagError(err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rc.Initial = fault
	return flagError(proxy.Run(ctx, rc))
}

// proxyConfig maps the proxy flags to a proxy.Config.
func proxyConfig(c *cli.Context) (proxy.Config, error) {
	pc := proxy.Config{
		Listen:         c.String("listen"),
		Upstream:       c.String("upstream"),
		Reactors:       c.Int("reactors"),
		Backlog:        c.Int("backlog"),
		MaxConns:       c.Int("max-conns"),
		ConnectTimeout: c.Duration("connect-timeout"),
		Seed:           c.Uint64("seed"),
		Proc:           c.Int("proc"),
		KeepListening:  c.Bool("keep-listening"),
	}
	if ip := c.String("source-ip"); ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return pc, fmt.Errorf("--source-ip %q: want an IP address", ip)
		}
		pc.SourceIP = a
	}
	if _, err := netip.ParseAddrPort(pc.Listen); err != nil {
		return pc, fmt.Errorf("--listen %q: want IP:PORT, e.g. 127.0.0.1:7100", pc.Listen)
	}
	return pc, nil
}

// scheduleFlag reads --chaos or --chaos-file; nil when neither is given.
func scheduleFlag(c *cli.Context) (*chaos.Schedule, error) {
	text, file := c.String("chaos"), c.String("chaos-file")
	if file != "" {
		if text != "" {
			return nil, fmt.Errorf("--chaos and --chaos-file: give one schedule, not both")
		}
		b, err := chaos.ReadSource(file)
		if err != nil {
			return nil, fmt.Errorf("--chaos-file: %w", err)
		}
		text = b
	}
	if text == "" {
		return nil, nil
	}
	s, err := chaos.Parse(text)
	if err != nil {
		if file != "" {
			return nil, fmt.Errorf("--chaos-file %s: %w", file, err)
		}
		return nil, fmt.Errorf("--chaos: %w", err)
	}
	return s, nil
}
