package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
)

// defaultLoadgenPolicy is the policy of `stampede loadgen` without --policy.
const defaultLoadgenPolicy = "exp:initial=1s,max=30s,jitter=0.5"

func init() {
	register(&cli.Command{
		Name:      "loadgen",
		Usage:     "run a fleet of WebSocket clients against any server",
		UsageText: "stampede loadgen --url ws://HOST:PORT/PATH [--clients N] [--ramp R] [--policy SPEC] [--duration D] [flags]",
		Description: "Connects --clients WebSocket clients (epoll reactors, raw sockets) at --ramp clients/s,\n" +
			"holds them for --duration, reconnects them with the backoff --policy whenever the server\n" +
			"drops them, and prints a summary: attempts, failures by class, disconnects, connect\n" +
			"latency, and clients that gave up with their last error. --out DIR also writes\n" +
			"DIR/summary.json, with outages detected from the clients' side.\n" +
			"ws:// clients run on epoll reactors (about 200 bytes each); wss:// clients are one\n" +
			"goroutine each with TLS state (several KiB each).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "server `URL` (ws:// or wss://)", Required: true},
			&cli.IntFlag{Name: "clients", Value: 100, Usage: "number of clients `N` (one process holds at most about 19,900)"},
			&cli.Float64Flag{Name: "ramp", Usage: "first connects per second `R` (0 = all at once, bounded by --max-inflight)"},
			&cli.IntFlag{Name: "max-inflight", Usage: "first connects in flight at once `N` (0 = 2000); never limits reconnects"},
			&cli.StringFlag{Name: "policy", Value: defaultLoadgenPolicy, Usage: "reconnect backoff policy `SPEC`"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "run seed `S`: every random draw is reproducible"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "how long to run `D`"},
			&cli.StringFlag{Name: "source-ips", Usage: "source addresses `LIST`, e.g. 127.0.0.2,127.0.0.3 or 127.0.0.2-127.0.0.9"},
			&cli.DurationFlag{Name: "connect-timeout", Value: loadgen.DefaultConnectTimeout, Usage: "TCP connect deadline `D`"},
			&cli.DurationFlag{Name: "handshake-timeout", Value: loadgen.DefaultHandshakeTimeout, Usage: "deadline `D` from TCP connected to the 101 answer"},
			&cli.IntFlag{Name: "syn-retries", Usage: "TCP_SYNCNT `N` per socket (0 = kernel default)"},
			&cli.StringFlag{Name: "mode", Value: loadgen.ModeNone, Usage: "message `MODE`: none (hold, answer pings) or echo (send, time the echo)"},
			&cli.Float64Flag{Name: "msg-rate", Value: loadgen.DefaultMsgRate, Usage: "echo messages per second per client `R`"},
			&cli.IntFlag{Name: "msg-size", Value: loadgen.DefaultMsgSize, Usage: "echo payload `BYTES`"},
			&headersFlag{cli.GenericFlag{Name: "header", Value: &headerFlag{}, Usage: "upgrade request header `'Name: value'` (repeatable; -H is the same)"}},
			&headersFlag{cli.GenericFlag{Name: "H", Value: &headerFlag{}, Hidden: true}},
			&cli.StringSliceFlag{Name: "subprotocol", Usage: "subprotocol `NAME` to offer (repeatable)"},
			&cli.BoolFlag{Name: "insecure", Usage: "wss://: accept any server certificate (a self-signed target)"},
			&cli.IntFlag{Name: "reactors", Usage: "epoll reactor goroutines `N` (0 = min(GOMAXPROCS, 4))"},
			&cli.DurationFlag{Name: "progress", Value: time.Second, Usage: "print live counters to stderr every `D` (0 = never)"},
			&cli.StringFlag{Name: "out", Usage: "write summary.json into `DIR`"},
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return err },
		Action:       loadgenAction,
	})
}

func loadgenAction(c *cli.Context) error {
	cfg, err := loadgenConfig(c)
	if err != nil {
		return err
	}
	if c.Duration("duration") <= 0 {
		return fmt.Errorf("--duration: must be positive, got %s", c.Duration("duration"))
	}
	fleet, err := loadgen.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.Duration("duration"))
	defer cancel()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		if every := c.Duration("progress"); every > 0 {
			progress(c.App.ErrWriter, fleet, every, done)
		}
	}()
	rep, err := fleet.Run(ctx)
	close(done)
	<-stopped // no progress line after the summary
	if err != nil {
		return err
	}
	printLoadgenSummary(c.App.Writer, rep, fleet.Stats(), cfg.FirstID)
	if dir := c.String("out"); dir != "" {
		return writeLoadgenSummary(dir, fleet.Config(), rep)
	}
	return nil
}

// loadgenConfig maps the flags to a loadgen.Config; a bad value gives an
// error naming its flag.
func loadgenConfig(c *cli.Context) (loadgen.Config, error) {
	pol, err := backoff.Parse(c.String("policy"))
	if err != nil {
		return loadgen.Config{}, fmt.Errorf("--policy: %w", err)
	}
	ips, err := loadgen.ParseSourceIPs(c.String("source-ips"))
	if err != nil {
		return loadgen.Config{}, fmt.Errorf("--source-ips: %w", err)
	}
	var header http.Header
	for _, h := range c.Generic("header").(*headerFlag).fields {
		if header == nil {
			header = http.Header{}
		}
		header.Add(h[0], h[1])
	}
	cfg := loadgen.Config{
		URL:              c.String("url"),
		Clients:          c.Int("clients"),
		Ramp:             c.Float64("ramp"),
		MaxInflight:      c.Int("max-inflight"),
		Policy:           pol,
		Seed:             c.Uint64("seed"),
		SourceIPs:        ips,
		ConnectTimeout:   c.Duration("connect-timeout"),
		HandshakeTimeout: c.Duration("handshake-timeout"),
		SynRetries:       c.Int("syn-retries"),
		Header:           header,
		Protocols:        c.StringSlice("subprotocol"),
		Mode:             c.String("mode"),
		MsgRate:          c.Float64("msg-rate"),
		MsgSize:          c.Int("msg-size"),
		Reactors:         c.Int("reactors"),
		TLSInsecure:      c.Bool("insecure"),
	}
	if err := cfg.Validate(); err != nil {
		return cfg, loadgenFlagError(err)
	}
	return cfg, nil
}

// loadgenFlags names the flag behind each Config field.
var loadgenFlags = map[string]string{
	"URL": "url", "Clients": "clients", "Ramp": "ramp", "MaxInflight": "max-inflight",
	"ConnectTimeout": "connect-timeout", "HandshakeTimeout": "handshake-timeout",
	"SynRetries": "syn-retries", "Header": "header", "Protocols": "subprotocol", "Mode": "mode",
	"MsgRate": "msg-rate", "MsgSize": "msg-size", "Reactors": "reactors", "SourceIPs": "source-ips",
}

// loadgenFlagError rewrites a loadgen.ConfigError to name the flag.
func loadgenFlagError(err error) error {
	if ce, ok := err.(*loadgen.ConfigError); ok {
		if name, ok := loadgenFlags[ce.Field]; ok {
			return fmt.Errorf("--%s: %s", name, ce.Reason)
		}
	}
	return err
}

// progress prints one line of live counters every interval until done.
func progress(w io.Writer, f *loadgen.Fleet, every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			s := f.Stats()
			fmt.Fprintf(w, "%6.1fs  connected %d/%d  inflight %d  attempts %d  failures %d  disconnects %d  stopped %d\n",
				now.Sub(start).Seconds(), s.Connected, s.Clients, s.Inflight, s.Attempts, s.FailureCount(), s.DisconnectCount(), s.StoppedCount())
		}
	}
}

// printLoadgenSummary prints the run's outcome in a few lines.
func printLoadgenSummary(w io.Writer, rep *results.Report, s loadgen.Stats, firstID uint32) {
	fmt.Fprintf(w, "clients %d  connected at the end %d  attempts %d  successes %d\n",
		s.Clients, s.Connected, s.Attempts, s.Successes)
	if n, last := firstConnects(rep, firstID); n > 0 {
		fmt.Fprintf(w, "first connects  %d within %.3fs of the start (%.0f/s)\n", n, last.Seconds(), float64(n)/last.Seconds())
	}
	fmt.Fprintf(w, "failures     %s\n", byClass(s.Failures[:]))
	fmt.Fprintf(w, "disconnects  %s\n", byClass(s.Disconnects[:]))
	if s.MsgSent > 0 {
		fmt.Fprintf(w, "messages     sent %d  echoed %d\n", s.MsgSent, s.MsgDelivered)
	}
	for _, h := range []struct {
		name string
		l    results.Latency
	}{
		{"connect", results.Percentiles(rep.Connect)},
		{"ttr", results.Percentiles(rep.TTR)},
		{"echo rtt", results.Percentiles(rep.RTT)},
	} {
		if h.l.Count > 0 {
			fmt.Fprintf(w, "%-12s p50 %.3gms  p90 %.3gms  p99 %.3gms  max %.3gms  (%d)\n", h.name, h.l.P50, h.l.P90, h.l.P99, h.l.Max, h.l.Count)
		}
	}
	classes := make([]string, 0, len(rep.Stopped))
	for k := range rep.Stopped {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		st := rep.Stopped[k]
		fmt.Fprintf(w, "stopped      %d %s, e.g. %s\n", st.Count, k, st.LastError)
	}
}

// firstConnects returns how many clients connected at least once and when
// the last of them first did.
func firstConnects(rep *results.Report, firstID uint32) (n int, last time.Duration) {
	seen := make([]bool, rep.Clients)
	for _, tr := range rep.Transitions {
		i := int(tr.Client - firstID)
		if !tr.Up || i < 0 || i >= len(seen) || seen[i] {
			continue
		}
		seen[i] = true
		n++
		last = max(last, tr.At)
	}
	return n, last
}

// byClass renders non-zero counters as "refused 12  timeout 3", or "none".
func byClass(counts []uint64) string {
	var parts []string
	for _, cl := range connerr.Classes() {
		if n := counts[cl]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", cl, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "  ")
}

// writeLoadgenSummary writes DIR/summary.json for a run without a
// supervisor: outages are detected from the clients' side.
func writeLoadgenSummary(dir string, cfg loadgen.Config, rep *results.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	s := results.Summarize(results.Input{
		RunID:  results.NewRunID(rep.Start, cfg.Seed),
		Seed:   cfg.Seed,
		Config: cfg,
		Report: rep,
		Events: results.DetectOutages(rep, results.DetectConfig{}),
	})
	if err := s.WriteJSON(dir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
