package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/storm"
)

func init() { register(drillCmd) }

// drillCmd is `stampede drill`: loadgen's fleet against the user's server,
// the user's deploy, SLO gates, report.html and JUnit XML.
var drillCmd = &cli.Command{
	Name:      "drill",
	Usage:     "rehearse a deploy against your own server and gate a pipeline on it",
	UsageText: "stampede drill --url ws[s]://HOST[:PORT]/PATH --clients N (--restart-cmd CMD --at T | --wait-for-outage) [--slo EXPR]... [--junit FILE] [flags]",
	Description: "Holds --clients WebSocket clients (the fleet of stampede loadgen, same flags) against --url,\n" +
		"runs your deploy command (--restart-cmd, as sh -c, at --at from the start) or waits while you\n" +
		"deploy by hand (--wait-for-outage), and judges what the clients saw: the --slo gates, the\n" +
		"command's exit status, an outage seen. Exit 0 when every gate held, 1 when one failed, 2 for\n" +
		"bad input or an incomplete run, 130 on Ctrl-C (results still written).\n" +
		"Writes the results folder (--out; 0700, files 0600) with report.html, deploy.log, and\n" +
		"--junit FILE for CI. A host other than loopback is refused unless --allow-remote names it.\n" +
		"Authorization, Cookie and --secret-header values and the URL's user info are written and\n" +
		"printed as <redacted>. See docs/drill.md.\n\n" +
		"Example (a server on this machine; ./restart.sh restarts it): stampede drill --url ws://127.0.0.1:9001/ \\\n" +
		"           --clients 200 --restart-cmd ./restart.sh --at 5s --duration 30s \\\n" +
		"           --slo 'recovered_share==100%' --junit stampede-results/junit.xml",
	Flags: append(append(append([]cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "your server's `URL` (ws:// or wss://; required)"},
		&cli.StringSliceFlag{Name: "allow-remote", Usage: "allow load to `HOST` (exactly the URL's host) although it is not loopback (repeatable)"},
		&cli.StringFlag{Name: "restart-cmd", Usage: "deploy `CMD`, run by /bin/sh (as sh -c CMD, but read from a pipe: never in ps) at --at; its output goes to deploy.log; a non-zero exit fails the drill"},
		&cli.DurationFlag{Name: "at", Usage: "when `T` the --restart-cmd starts, from the start barrier (inside --duration)"},
		&cli.DurationFlag{Name: "restart-timeout", DefaultText: "until the run's end", Usage: "kill the --restart-cmd (and fail) after `D`"},
		&cli.BoolFlag{Name: "wait-for-outage", Usage: "run no command: you deploy by hand during the run; the drill fails unless the clients saw an outage"},
		&cli.StringFlag{Name: "min-connected", Value: "90%", Usage: "the share `P` of --clients that must be connected at --at (with --wait-for-outage: by the end of the ramp plus 10s), or the drill stops (exit 1) and nothing is deployed"},
		&cli.StringFlag{Name: "junit", Usage: "write JUnit XML to `FILE`: one testcase per --slo and one for the deploy"},
	}, fleetFlags(fleetDefaults{policy: defaultLoadgenPolicy, out: "stampede-results/drill-TIME"})...),
		&headersFlag{cli.GenericFlag{Name: "header", Value: &headerFlag{}, Usage: "upgrade request header `'Name: value'` (repeatable; -H is the same); Authorization and Cookie values are secret"}},
		&headersFlag{cli.GenericFlag{Name: "H", Value: &headerFlag{}, Hidden: true}},
	), append(knobFlags("Client.SecretHeaders", "Client.Protocols", "Client.TLSCAFile", "Client.TLSCertFile", "Client.TLSKeyFile", "Client.TLSServerName"),
		&cli.BoolFlag{Name: "insecure", Usage: "wss://: accept any server certificate (prints a warning on every run)"},
		haproxySocketFlag,
	)...),
	Before: requireFlags("url"),
	Action: drillAction,
}

func drillAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("drill: unexpected argument %q", c.Args().First())
	}
	// The target first: a remote host is refused before anything else
	// happens, folder or socket.
	if err := drill.CheckTarget(c.String("url"), c.StringSlice("allow-remote")); err != nil {
		return flagError(err)
	}
	fleet, err := loadgenConfig(c)
	if err != nil {
		return err
	}
	run := storm.Config{Fleet: fleet, LoadgenProcs: c.Int("loadgen-procs")}
	out := filepath.Join("stampede-results", "drill-"+time.Now().UTC().Format("2006-01-02T15-04-05Z"))
	if err := fleetRunConfig(c, out, &run); err != nil {
		return err
	}
	if run.HAProxySockets, err = haproxySockets(c); err != nil {
		return err
	}
	run.Settings = fleetSettings(c, run.Fleet)
	minConnected, err := parseShare(c.String("min-connected"))
	if err != nil {
		return fmt.Errorf("--min-connected: %w", err)
	}
	ctx, abort, stop := interruptibleDeploy(c)
	defer stop()
	cfg := drill.Config{
		Run:            run,
		MinConnected:   minConnected,
		Abort:          abort,
		AllowRemote:    c.StringSlice("allow-remote"),
		RestartCmd:     c.String("restart-cmd"),
		At:             c.Duration("at"),
		CommandTimeout: c.Duration("restart-timeout"),
		WaitForOutage:  c.Bool("wait-for-outage"),
		JUnit:          c.String("junit"),
		Log:            c.App.ErrWriter,
	}
	res, err := drill.Run(ctx, cfg)
	if res == nil {
		return flagError(err)
	}
	var notConnected *drill.NotConnectedError
	if errors.As(err, &notConnected) { // one line: the figures measured nothing
		fmt.Fprintf(c.App.Writer, "results: %s\n", run.Out)
		return cli.Exit(err.Error(), 1)
	}
	if perr := report.WriteText(c.App.Writer, res.Summary); perr != nil {
		return perr
	}
	fmt.Fprintf(c.App.Writer, "results: %s\n", run.Out)
	if cfg.JUnit != "" {
		fmt.Fprintf(c.App.Writer, "junit: %s\n", cfg.JUnit)
	}
	if err != nil {
		return runError(err)
	}
	return sloExit(res.Summary)
}

// parseShare reads a share of the fleet: "90%" or 0.9, above 0 and at
// most 100%.
func parseShare(s string) (float64, error) {
	v, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if pct {
		f /= 100
	}
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("invalid value %q: want a share above 0 and at most 100%%, e.g. 90%% or 0.9", s)
	}
	return f, nil
}

// interruptibleDeploy is interruptible for a drill, whose deploy command
// must not be left halfway: the first Ctrl-C (or SIGTERM) ends ctx, which
// stops the load while the drill lets a deploy under way finish; the
// second closes abort, which stops that deploy; the third exits at once.
func interruptibleDeploy(c *cli.Context) (ctx context.Context, abort <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(c.Context)
	aborted := make(chan struct{})
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case <-sigs:
			case <-done:
				return
			}
			switch n {
			case 1:
				fmt.Fprintln(c.App.ErrWriter, "stampede: stopping the fleet; results are still written, and a deploy under way is let finish (Ctrl-C again to stop it)")
				cancel()
			case 2:
				fmt.Fprintln(c.App.ErrWriter, "stampede: stopping the deploy command (Ctrl-C again to kill everything)")
				close(aborted)
			default:
				os.Exit(exitInterrupted)
			}
		}
	}()
	return ctx, aborted, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
