package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/httpfleet"
	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

// httpFleetFlags are the flags of `stampede http` that run a fleet
// (--clients); without --clients the command sends one request.
func httpFleetFlags() []cli.Flag {
	return append(append(knobFlags(httpFleetFields...),
		&cli.StringFlag{Name: "idempotency-key", Usage: "fleet: 'auto' gives each logical request its own Idempotency-Key (kept across its retries)"},
		&cli.BoolFlag{Name: "no-retry-after", Usage: "ignore Retry-After hints: wait by policy (same as --retry-after=false)"},
		&cli.IntFlag{Name: "attempts", Usage: "attempts `N` per request, the first included (instead of --retries)"},
		&cli.StringFlag{Name: "out", Usage: "fleet: results folder `DIR` (summary.json, http_timeline.csv, .hlog files)"},
		forceFlag(),
		&cli.StringSliceFlag{Name: "secret-header", Usage: "header or query parameter `NAME` whose value is secret too, written <redacted> in the results and lines printed (repeatable; docs/secrets.md)"},
		&cli.StringFlag{Name: "policies", Usage: "fleet: run once per policy `A,B,C` and compare them side by side"},
		sloFlag(),
	), liveFlagDefs()...)
}

// fleetOnly are the flags that mean nothing without --clients.
var fleetOnly = []string{"rate", "duration", "grace", "deadline", "idempotency-key", "out", "force", "policies", "slo",
	"live", "live-addr", "live-tls-cert", "live-tls-key"}

// httpFleetAction runs `stampede http --clients N ...`: one fleet, or one
// per --policies entry.
func httpFleetAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("http: want exactly one URL argument, got %d", c.NArg())
	}
	cfg, err := httpFleetConfig(c)
	if err != nil {
		return err
	}
	specs := []string{""}
	if c.IsSet("policies") {
		if c.IsSet("policy") {
			return errors.New("--policies and --policy: give one of them")
		}
		if cfg.Live != nil {
			return errors.New("--live and --policies: a live page follows one fleet; give one --policy, or drop --live")
		}
		if specs, err = splitPolicies(c.String("policies")); err != nil {
			return err
		}
	}
	out := c.String("out")
	if out != "" { // before any socket opens
		for i, spec := range specs {
			if err := checkOut(c, fleetDir(out, i, spec, len(specs))); err != nil {
				return err
			}
		}
	}
	flags := renderSettings(c)
	ctx, stop := interruptible(c) // Ctrl-C: the folder of what ran, marked interrupted
	defer stop()
	var sums []*summary.Summary
	var names []string
	for i, spec := range specs {
		run := cfg
		name := httpretry.DefaultPolicy.String()
		if cfg.Retry.Policy != nil {
			name = cfg.Retry.Policy.String()
		}
		if spec != "" {
			p, _ := backoff.Parse(spec) // splitPolicies parsed it
			run.Retry.Policy, name = &p, p.String()
		}
		run.Settings = flags
		if spec != "" {
			run.Settings = flags.with("policy", spec, "policies")
		}
		dir := ""
		if out != "" {
			dir = fleetDir(out, i, spec, len(specs))
		}
		res, sum, err := httpfleet.RunTo(ctx, run, dir)
		if err != nil {
			return flagError(err)
		}
		if len(specs) == 1 {
			writeFleetSummary(c.App.Writer, sum.HTTP)
		}
		writeSLOLines(c.App.Writer, "", sum)
		sums, names = append(sums, sum), append(names, name)
		if res.Interrupted {
			return cli.Exit("interrupted: the fleet was stopped early; the results cover what ran", exitInterrupted)
		}
	}
	if len(specs) > 1 {
		writeFleetTable(c.App.Writer, names, sums)
	}
	if err := unreachable(sums[0].HTTP); err != nil && len(cfg.SLO) == 0 {
		return err
	}
	return sloExit(sums...)
}

// unreachable is the one line for a run in which no request got any
// answer: every one ended with the same connection class.
func unreachable(h *results.HTTP) error {
	if h.Requests == 0 || len(h.Outcomes) != 1 {
		return nil
	}
	for class, n := range h.Outcomes {
		if class == httpfleet.OutcomeOK || class == httpfleet.OutcomeUnfinished || strings.HasPrefix(class, "status_") {
			return nil
		}
		return cli.Exit(fmt.Sprintf("http: %s unreachable: all %d requests ended %s", h.URL, n, class), 1)
	}
	return nil
}

// httpFleetConfig maps the flags to an httpfleet.Config.
func httpFleetConfig(c *cli.Context) (httpfleet.Config, error) {
	req, err := httpRequest(c)
	if err != nil {
		return httpfleet.Config{}, err
	}
	retry, err := fleetRetryConfig(c)
	if err != nil {
		return httpfleet.Config{}, err
	}
	cfg := httpfleet.Config{URL: req.URL.String(), Method: req.Method, Header: req.Header, Host: req.Host, Retry: retry,
		SecretHeaders: c.StringSlice("secret-header")}
	if cfg.SLO, err = sloFlagValue(c, true); err != nil {
		return cfg, err
	}
	if err := liveFlags(c, &cfg.Live); err != nil {
		return cfg, err
	}
	_ = fillKnobs(c, &cfg.HTTPFleet, httpFleetFields...) // no HTTP fleet knob parses a string
	if req.Host == req.URL.Host {
		cfg.Host = ""
	}
	if req.Body != nil {
		if cfg.Body, err = io.ReadAll(req.Body); err != nil {
			return cfg, fmt.Errorf("--data: %w", err)
		}
	}
	switch k := c.String("idempotency-key"); k {
	case "":
	case "auto":
		cfg.AutoIdempotencyKey = true
	default:
		return cfg, fmt.Errorf("--idempotency-key: %q: the only value is auto (a fixed key is a -H 'Idempotency-Key: ...')", k)
	}
	return cfg, nil // httpfleet.Run validates it, before any socket opens
}

// fleetRetryConfig is httpConfig with the fleet's --attempts and
// --no-retry-after.
func fleetRetryConfig(c *cli.Context) (httpretry.Config, error) {
	cfg, err := httpConfig(c)
	if err != nil {
		return cfg, err
	}
	if c.IsSet("no-retry-after") && c.IsSet("retry-after") {
		return cfg, errors.New("--no-retry-after and --retry-after: give one of them")
	}
	if c.Bool("no-retry-after") {
		cfg.IgnoreRetryAfter = true
	}
	if c.IsSet("attempts") {
		n := c.Int("attempts")
		switch {
		case c.IsSet("retries"):
			return cfg, errors.New("--attempts and --retries: give one of them")
		case n < 1:
			return cfg, fmt.Errorf("--attempts: must be at least 1, got %d", n)
		case n == 1:
			cfg.MaxRetries = -1
		default:
			cfg.MaxRetries = n - 1
		}
	}
	return cfg, nil
}

// splitPolicies reads --policies A,B,C. A policy spec holds commas of its
// own (exp:initial=1s,max=30s): a piece without a kind (key=value only)
// belongs to the spec before it.
func splitPolicies(s string) ([]string, error) {
	var specs []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if len(specs) > 0 && strings.Contains(f, "=") && !strings.Contains(f, ":") {
			specs[len(specs)-1] += "," + f
			continue
		}
		specs = append(specs, f)
	}
	if len(specs) == 0 {
		return nil, errors.New("--policies: empty; give policy specs, e.g. fixed:delay=1s,exp")
	}
	for _, sp := range specs {
		if _, err := backoff.Parse(sp); err != nil {
			return nil, fmt.Errorf("--policies: %w", err)
		}
	}
	return specs, nil
}

// fleetDir is the results folder of the i-th run, of policy spec: out
// itself for a single run, a folder inside it per policy when there are
// n > 1, named as the bench names its runs' (folder.PolicyDir).
func fleetDir(out string, i int, spec string, n int) string {
	if n <= 1 {
		return out
	}
	return filepath.Join(out, folder.PolicyDir(i, spec))
}

// writeFleetSummary prints a fleet's figures.
func writeFleetSummary(w io.Writer, h *results.HTTP) {
	fmt.Fprintf(w, "%s %s  offered %.4g/s  policy %s  retry-after %v\n", h.Method, h.URL, h.OfferedPerS, h.Policy, h.RetryAfter)
	fmt.Fprintf(w, "requests %d  attempts %d  succeeded %d  goodput %.4g/s  amplification %.3g\n",
		h.Requests, h.Attempts, h.Succeeded, h.GoodputPerS, h.Amplification)
	fmt.Fprintf(w, "retry-after seen %d  honoured %d  early retries %d  abandoned %d  not_retried_unsafe %d\n",
		h.RetryAfterSeen, h.RetryAfterHonoured, h.EarlyRetries, h.Abandoned, h.NotRetriedUnsafe)
	fmt.Fprintf(w, "latency from scheduled send p50 %.1fms p99 %.1fms max %.1fms  peak rejected/100ms %d\n",
		h.LatencyMS.P50, h.LatencyMS.P99, h.LatencyMS.Max, h.PeakRejectedPer100ms)
	fmt.Fprintf(w, "statuses %s  outcomes %s\n", countsText(h.Statuses), countsText(h.Outcomes))
}

// writeFleetTable prints the policies side by side.
func writeFleetTable(w io.Writer, names []string, sums []*summary.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tgoodput/s\tamplification\tearly retries\tabandoned\tp99")
	for i, s := range sums {
		h := s.HTTP
		fmt.Fprintf(tw, "%s\t%.4g\t%.3g\t%d\t%d\t%.1fms\n", names[i], h.GoodputPerS, h.Amplification, h.EarlyRetries, h.Abandoned, h.LatencyMS.P99)
	}
	tw.Flush()
}
