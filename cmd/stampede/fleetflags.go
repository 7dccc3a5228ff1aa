package main

import (
	"errors"
	"fmt"
	"github.com/stampede-dev/stampede/report/live"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/metrics"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/storm"
)

// fleetDefaults are what the commands that run a fleet differ in.
type fleetDefaults struct {
	// policy is the default --policy.
	policy string
	// out says where the results go without --out.
	out string
}

// fleetFlags are the flags of every command that runs a fleet: run, bench
// and loadgen take them from here, so they have the same names, meanings
// and help. fleetConfig and fleetRun map them.
func fleetFlags(d fleetDefaults) []cli.Flag {
	flags := []cli.Flag{withDefault(knobFlag(knobOf("Client.Clients")), 100)}
	flags = append(flags, &cli.IntFlag{Name: "loadgen-procs", Usage: "loadgen processes `N` (0 = as many as the fleet needs; 1 = this process)"})
	flags = append(flags, knobFlags("Client.Ramp", "Client.MaxInflight", "Client.MaxAttemptRate")...)
	flags = append(flags, withDefault(knobFlag(knobOf("Client.Policy")), d.policy), withDefault(knobFlag(knobOf("Client.Seed")), uint64(1)))
	flags = append(flags, &cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "length `D` of the run from the start barrier"})
	flags = append(flags, knobFlags(fleetFields[6:]...)...)
	flags = append(flags, []cli.Flag{
		&cli.StringFlag{Name: "out", DefaultText: d.out, Usage: "results folder `DIR`: " + resultFiles},
		forceFlag(),
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no progress lines"},
		&cli.DurationFlag{Name: "progress-interval", Aliases: []string{"progress"}, Value: storm.DefaultProgressInterval, Usage: "time `D` between progress lines when stderr is not a terminal (a terminal gets one status line, redrawn every second; 0 = --quiet)"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics on `ADDR`/metrics while the run goes, e.g. 127.0.0.1:9100"},
		&cli.DurationFlag{Name: "metrics-linger", Usage: "keep serving --metrics-addr for `D` after the run, with the final figures, so a scrape sees them"},
	}...)
	flags = append(flags, liveFlagDefs()...)
	return append(flags, []cli.Flag{
		&cli.StringFlag{Name: "pushgateway", Usage: "push the final metrics to the Prometheus Pushgateway at `URL` when the run ends (job stampede, grouped by run_id), e.g. http://127.0.0.1:9091"},
		&cli.StringFlag{Name: "otlp-endpoint", Usage: "export the same metrics over OTLP to the OpenTelemetry collector at `URL` while the run goes and once at its end: http[s]://HOST:4318 (OTLP/HTTP) or grpc[s]://HOST:4317 (OTLP/gRPC)"},
		&cli.StringFlag{Name: "otlp-protocol", Usage: "OTLP `PROTOCOL`, grpc or http/protobuf, instead of the one --otlp-endpoint's scheme picks"},
		&cli.StringSliceFlag{Name: "otlp-header", Usage: "header `NAME=VALUE` sent with every OTLP export (repeatable); secret: hidden in ps, logs and results"},
		&cli.DurationFlag{Name: "otlp-interval", Value: metrics.DefaultOTLPInterval, Usage: "time `D` between OTLP exports"},
		sloFlag(),
	}...)
}

// liveFlagDefs are --live and --live-*, of every command that runs a
// fleet (http's included); liveFlags maps them.
func liveFlagDefs() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "live", Usage: "serve the run's live page while it goes (the report's page, updated every half second, becoming report.html at the end); its URL, with a token exchanged for a cookie, is printed at the start"},
		&cli.StringFlag{Name: "live-addr", DefaultText: "127.0.0.1 and a free port", Usage: "serve the live page on `ADDR` (implies --live); beyond loopback it needs --live-tls-cert and --live-tls-key"},
		&cli.StringFlag{Name: "live-tls-cert", Usage: "serve the live page over HTTPS with the certificate `FILE` (PEM; with --live-tls-key)"},
		&cli.StringFlag{Name: "live-tls-key", Usage: "the live page's private key `FILE` (PEM; with --live-tls-cert)"},
	}
}

// resultFiles lists every file a results folder holds.
var resultFiles = fmt.Sprintf("%s, %s, %s, %s, %s, %s, %s, %s, %s, %s (with --haproxy-socket), %s",
	folder.SummaryFile, folder.TimelineFile, results.ConnectLogFile, results.TTRLogFile, results.RTTLogFile,
	results.RTTScheduledLogFile, results.ResumeLogFile, results.ResourcesFile, results.KernelFile, results.HAProxyFile, "report.html")

// fleetRunConfig maps the shared flags that are not the fleet's into cfg:
// the run's length, where its results and metrics go, its gates;
// defaultOut is the results folder without --out ("" for none). The
// results folder is checked here, before any process starts or any socket
// opens: a folder that cannot be written fails the command now, not after
// the run.
func fleetRunConfig(c *cli.Context, defaultOut string, cfg *storm.Config) error {
	cfg.Duration = c.Duration("duration")
	cfg.Out = c.String("out")
	cfg.ProgressInterval = c.Duration("progress-interval")
	cfg.MetricsAddr = c.String("metrics-addr")
	cfg.MetricsLinger = c.Duration("metrics-linger")
	cfg.Pushgateway = c.String("pushgateway")
	if err := otlpFlags(c, &cfg.OTLP); err != nil {
		return err
	}
	if err := liveFlags(c, &cfg.Live); err != nil {
		return err
	}
	if cfg.Duration <= 0 {
		return fmt.Errorf("--duration: must be positive, got %s", cfg.Duration)
	}
	if cfg.ProgressInterval < 0 || (cfg.ProgressInterval > 0 && cfg.ProgressInterval < storm.MinProgressInterval) {
		return fmt.Errorf("--progress-interval: must be 0 (no progress) or at least %s, got %s", storm.MinProgressInterval, cfg.ProgressInterval)
	}
	if !c.Bool("quiet") && cfg.ProgressInterval > 0 {
		cfg.Log = c.App.ErrWriter
	}
	switch {
	case cfg.MetricsLinger < 0:
		return fmt.Errorf("--metrics-linger: must not be negative, got %s", cfg.MetricsLinger)
	case cfg.MetricsLinger > 0 && cfg.MetricsAddr == "":
		return errors.New("--metrics-linger: needs --metrics-addr")
	}
	if cfg.Pushgateway != "" {
		u, err := url.Parse(cfg.Pushgateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--pushgateway %q: want http://HOST:PORT", cfg.Pushgateway)
		}
	}
	var err error
	if cfg.SLO, err = sloFlagValue(c, false); err != nil {
		return err
	}
	if cfg.Out == "" {
		cfg.Out = defaultOut
	}
	if cfg.Out != "" {
		if err := checkOut(c, cfg.Out); err != nil {
			return err
		}
	}
	return nil
}

// forceFlag is --force of every command that writes a results folder.
func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "write into --out even when it holds a results folder already (its files are replaced)"}
}

// checkOut makes sure the folder dir can be a new results folder: it
// holds none already (unless --force), and it can be created and written
// to (folder.CheckFolder); the file system is left as it was found.
func checkOut(c *cli.Context, dir string) error {
	err := folder.CheckFolder(dir, c.Bool("force"))
	if errors.Is(err, folder.ErrFolderExists) {
		return fmt.Errorf("--out: %v; give --force to overwrite it, or another --out", err)
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// thousands writes n with a comma every three digits: 15,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// otlpFlags maps the --otlp-* flags into c, and checks them before
// anything connects. A header's value is never quoted back: it is secret.
func otlpFlags(c *cli.Context, o *metrics.OTLPConfig) error {
	o.Endpoint, o.Protocol = c.String("otlp-endpoint"), c.String("otlp-protocol")
	if c.IsSet("otlp-interval") || o.Endpoint != "" {
		o.Interval = c.Duration("otlp-interval")
	}
	for _, h := range c.StringSlice("otlp-header") {
		k, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--otlp-header: want NAME=VALUE, got a value without a name and '='")
		}
		if o.Headers == nil {
			o.Headers = map[string]string{}
		}
		o.Headers[strings.TrimSpace(k)] = v
	}
	return flagError(o.Validate())
}

// liveFlags maps --live and --live-* into *lc (nil without them), checked
// before any socket opens; the page's URL, token included, is printed
// once to stderr when it listens, and nowhere else.
func liveFlags(c *cli.Context, lc **live.Config) error {
	if !c.Bool("live") && !c.IsSet("live-addr") && !c.IsSet("live-tls-cert") && !c.IsSet("live-tls-key") {
		return nil
	}
	w := c.App.ErrWriter
	cfg := &live.Config{Addr: c.String("live-addr"), TLSCert: c.String("live-tls-cert"), TLSKey: c.String("live-tls-key"),
		Announce: func(url string) { fmt.Fprintf(w, "live: %s (open it once: its token becomes a cookie)\n", url) }}
	if err := flagError(cfg.Validate()); err != nil {
		return err
	}
	*lc = cfg
	return nil
}
