package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/advise"
	"github.com/stampede-dev/stampede/drill"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/sim"
	"github.com/stampede-dev/stampede/storm"
)

// verifyTolerance is the relative error of the recommended policy's R99
// that --verify calls a kept prediction.
const verifyTolerance = 0.15

func init() {
	register(&cli.Command{
		Name:      "advise",
		Usage:     "search reconnect policies with the simulator for a fleet and a server's capacity, recommend one",
		UsageText: "stampede advise [--clients N] [--accept-rate R] [--backlog N] [--from DIR] --chaos SCHEDULE [--policy SPEC] [--max-delay D] [--objective r99|wasted|peak] [--verify]",
		Description: "Simulates the current --policy and a bounded, seeded set of candidate policies (kinds,\n" +
			"initial, multiplier, max, jitter, spread) over --seeds seeds against the server's capacity\n" +
			"(--accept-rate, --backlog, --handshake-cost, --lb-rate, --lb-queue, or inferred from a real\n" +
			"run's results folder with --from), prints the best beside the current policy (R50/R99/R100,\n" +
			"herd peak against the capacity per 100 ms, wasted attempts, the physical bound clients /\n" +
			"accept rate), recommends one, and writes a results folder whose report.html plots them.\n" +
			"--verify runs the recommended and the current policy for real against the bundled target\n" +
			"with the same capacity and prints predicted against measured. Guide: docs/advise.md.\n\n" +
			"Example (under a minute on a laptop; add --verify for two real runs):\n" +
			"  stampede advise --clients 2000 --accept-rate 2000 --backlog 128 --chaos 'at 8s restart abrupt down=2s'",
		Flags:  adviseFlags(),
		Before: checkCPUFlags,
		Action: adviseAction,
	})
}

func adviseFlags() []cli.Flag {
	var flags []cli.Flag
	for _, f := range simulateFlags() {
		switch f.Names()[0] {
		case "syn-retries": // the bench's storm, which --verify runs
			flags = append(flags, withDefault(f, benchSynRetries))
		case "handshake-timeout":
			flags = append(flags, withDefault(f, benchHandshakeTimeout))
		case "duration":
			flags = append(flags, withDefault(f, benchDuration))
		case "out":
			flags = append(flags, withDefaultText(f, "stampede-results/advise-TIME"))
		case "slo": // the search has no run to gate
		default:
			flags = append(flags, f)
		}
	}
	for _, f := range knobFlags(verifyFields...) {
		if f.Names()[0] == "protocol" {
			f = withUsage(f, "with --verify: session protocol `NAME` the verifying runs' clients speak and the bundled target serves, socketio, mqtt or actioncable (docs/protocols.md); the search simulates no session")
		}
		flags = append(flags, f)
	}
	return append(flags,
		&cli.StringFlag{Name: "from", Usage: "infer the server's accept rate, backlog, fleet and event from the results folder `DIR` of a real run or drill (flags given win)"},
		&cli.StringFlag{Name: "library", Usage: "search only what client library `NAME`'s options express (" + strings.Join(advise.Libraries(), ", ") + ") and print the recommendation as its options (docs/clients.md)"},
		&cli.DurationFlag{Name: "max-delay", Usage: "no recommended policy waits longer than `D` between attempts (0 = no limit)"},
		&cli.StringFlag{Name: "objective", Value: string(advise.R99), Usage: "what to minimise among policies that bring the fleet back within capacity: `r99`, wasted or peak"},
		&cli.IntFlag{Name: "seeds", Value: advise.DefaultSeeds, Usage: "simulate every candidate with `N` seeds (--seed, --seed+1, ...)"},
		&cli.IntFlag{Name: "candidates", Value: advise.DefaultBudget, Usage: "candidate policies `N` to simulate (each with every seed)"},
		&cli.BoolFlag{Name: "verify", Usage: "run the recommended and the current policy for real against the bundled target with the same capacity (or --url), and print predicted against measured"},
		&cli.StringFlag{Name: "url", Usage: "--verify against your server at `URL` (ws:// or wss://) as stampede drill does, its deploy --restart-cmd run in each of the two runs"},
		&cli.StringSliceFlag{Name: "allow-remote", Usage: "with --url: allow load to `HOST` (exactly the URL's host) although it is not loopback (repeatable)"},
		&cli.StringFlag{Name: "restart-cmd", Usage: "with --url: the deploy `CMD` (sh -c) each verifying run starts at --at"},
		&cli.DurationFlag{Name: "at", DefaultText: "the chaos event's start", Usage: "with --url: when `T` the --restart-cmd starts, from the start"},
	)
}

func adviseAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("advise: unexpected argument %q", c.Args().First())
	}
	cfg, out, err := adviseConfig(c)
	if err != nil {
		return err
	}
	settings := simSettings(c, cfg.Sim)
	ctx, stop := interruptible(c)
	defer stop()
	started := time.Now()
	res, err := advise.Search(ctx, cfg)
	if err != nil {
		return adviseInterrupted(err, out, settings)
	}
	if err := res.WriteText(c.App.Writer); err != nil {
		return err
	}
	if snippet, ok := res.Snippet(); ok {
		fmt.Fprintf(c.App.Writer, "\nin %s's own options:\n%s\n", cfg.Library, snippet)
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.ErrWriter, "advise: %d simulations in %s\n", res.Simulations, time.Since(started).Round(time.Millisecond))
	}
	sum := res.Summary(settings)
	var verr error
	held := true
	if c.Bool("verify") {
		fmt.Fprintf(c.App.ErrWriter, "advise: verifying with real sockets: %s, then %s\n", res.Recommended().Policy, res.Current.Policy)
		run := adviseRunner(c, res.Config.Sim, settings)
		if c.String("url") != "" {
			run = adviseDrillRunner(c, res.Config.Sim, settings)
		}
		sum.Advise.Verify, verr = advise.Verify(ctx, res, out, run)
		fmt.Fprintln(c.App.Writer)
		if held, err = advise.WriteVerify(c.App.Writer, sum.Advise.Verify, res.Capacity.Per100ms(), verifyTolerance); err != nil {
			return err
		}
	}
	sum.Interrupted = ctx.Err() != nil // Ctrl-C during the verifying runs
	if err := res.WriteFolder(out, sum); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "results: %s\n", out)
	if verr != nil {
		return runError(verr)
	}
	if !held {
		return cli.Exit("verify: the recommended policy did not hold its prediction with real sockets (above)", 1)
	}
	return nil
}

// adviseInterrupted is advise's error when its search failed: when it was
// interrupted (Ctrl-C), the simulation under way is written to out,
// marked interrupted, and the exit status is 130.
func adviseInterrupted(err error, out string, settings settings) error {
	var ie *advise.InterruptedError
	if !errors.As(err, &ie) {
		if errors.Is(err, sim.ErrInterrupted) {
			return cli.Exit("interrupted: the search was stopped early", exitInterrupted)
		}
		return flagError(err)
	}
	if werr := ie.WriteFolder(out, settings); werr != nil {
		return werr
	}
	return cli.Exit("interrupted: the search was stopped early; "+out+" holds the simulation under way", exitInterrupted)
}

// adviseConfig maps the flags to a search and its results folder.
func adviseConfig(c *cli.Context) (advise.Config, string, error) {
	if err := checkVerifyURL(c); err != nil {
		return advise.Config{}, "", err
	}
	var m *advise.Measured
	if dir := c.String("from"); dir != "" {
		got, err := advise.InferDir(dir)
		if err != nil {
			return advise.Config{}, "", flagError(err)
		}
		if w := got.LockstepWarning(); w != "" {
			fmt.Fprintln(c.App.ErrWriter, "advise: "+w)
		}
		m = &got
	}
	if m != nil && !c.IsSet("chaos") && !c.IsSet("chaos-file") && m.Chaos != "" {
		if err := c.Set("chaos", m.Chaos); err != nil {
			return advise.Config{}, "", err
		}
	}
	if c.String("chaos") == "" && c.String("chaos-file") == "" {
		return advise.Config{}, "", fmt.Errorf("--chaos: advise needs an event to recover from, e.g. --chaos 'at 8s restart abrupt down=2s' (or --from a run that had one)")
	}
	sc, _, err := simConfig(c)
	if err != nil {
		return advise.Config{}, "", err
	}
	if err := fillKnobs(c, &sc.Client, verifyFields...); err != nil {
		return advise.Config{}, "", err
	}
	if p := sc.Client.Session.Protocol; p != "" && !c.Bool("verify") {
		return advise.Config{}, "", fmt.Errorf("--protocol %s: only with --verify (the search simulates no session; the verifying runs speak it)", p)
	}
	cfg := advise.Config{Sim: sc, Objective: advise.Objective(c.String("objective")), MaxDelay: c.Duration("max-delay"),
		Seeds: c.Int("seeds"), Budget: c.Int("candidates"), Library: c.String("library")}
	if m != nil {
		applyMeasured(c, &cfg, *m)
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Join("stampede-results", "advise-"+time.Now().UTC().Format("2006-01-02T15-04-05Z"))
	}
	if err := checkOut(c, out); err != nil {
		return cfg, "", err
	}
	return cfg, out, nil // advise.Search validates it
}

// applyMeasured puts what a results folder measured into the search,
// where the flags did not say otherwise.
func applyMeasured(c *cli.Context, cfg *advise.Config, m advise.Measured) {
	if !c.IsSet("clients") && m.Clients > 0 {
		cfg.Sim.Clients = m.Clients
	}
	if !c.IsSet("backlog") && m.Backlog > 0 {
		cfg.Sim.Backlog = m.Backlog
	}
	if !c.IsSet("procs") && m.Procs > 0 {
		cfg.Sim.Procs = m.Procs
	}
	if !c.IsSet("policy") && m.Policy != nil {
		cfg.Sim.Policy = *m.Policy
	}
	if !c.IsSet("duration") && m.Duration > 0 {
		cfg.Sim.Duration = m.Duration
	}
	applyMeasuredTLS(c, cfg, m.TLS)
	if c.IsSet("accept-rate") {
		return // the flags' capacity
	}
	cfg.Sim.AcceptRate = m.Capacity.AcceptRate
	if !c.IsSet("ramp") {
		cfg.Sim.Ramp = 0.9 * cfg.Sim.AcceptRate
	}
	cfg.Capacity = advise.CapacityOf(cfg.Sim)
	cfg.Capacity.Source = m.Capacity.Source
}

// applyMeasuredTLS puts a results folder's TLS into the search, unless a
// TLS flag is given: the flags then say the server's TLS.
func applyMeasuredTLS(c *cli.Context, cfg *advise.Config, t advise.TLSSettings) {
	for _, n := range []string{"tls", "tls-cert-kind", "no-tls-tickets", "tls-ticket-keys", "tls-resume"} {
		if c.IsSet(n) {
			return
		}
	}
	s := &cfg.Sim
	s.Server.TLS, s.TLSCertKind, s.TLSNoTickets, s.TLSTicketKeys, s.TLSNoResume = t.On, t.CertKind, t.NoTickets, t.TicketKeys, t.NoResume
}

// adviseRunner runs a real storm of the searched fleet, server and chaos
// with one policy against the bundled target (storm.Run), as bench does.
func adviseRunner(c *cli.Context, sc sim.Config, settings settings) advise.Runner {
	cfg := storm.FromSim(sc)
	cfg.Target.Session = sc.Client.Session.Protocol // the bundled target serves the session
	if !c.Bool("quiet") {
		cfg.Log = c.App.ErrWriter
	}
	return storm.PolicyRunner(cfg, func(policy string) any { return settings.with("policy", policy, "seed") })
}

// checkVerifyURL checks --url and its rails before anything happens: a
// host other than loopback is refused unless --allow-remote names it, and
// the two runs need --verify and a deploy command.
func checkVerifyURL(c *cli.Context) error {
	u := c.String("url")
	if u == "" {
		for _, f := range []string{"allow-remote", "restart-cmd", "at"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s: only with --url", f)
			}
		}
		return nil
	}
	if err := drill.CheckTarget(u, c.StringSlice("allow-remote")); err != nil {
		return flagError(err)
	}
	switch {
	case !c.Bool("verify"):
		return fmt.Errorf("--url: only with --verify (the search itself needs no server)")
	case c.String("restart-cmd") == "":
		return fmt.Errorf("--restart-cmd: required with --url: the deploy each verifying run starts")
	}
	return nil
}

// adviseDrillRunner runs a drill against --url with one policy: the
// fleet, the deploy command at --at (the chaos event's start by default),
// the drill's rails (drill.Run checks the host again).
func adviseDrillRunner(c *cli.Context, sc sim.Config, settings settings) advise.Runner {
	at := c.Duration("at")
	if !c.IsSet("at") && sc.Schedule != nil {
		if planned := sc.Schedule.Plan(sc.Duration); len(planned) > 0 {
			at = planned[0].At
		}
	}
	var fleet loadgen.Config
	fleet.Client = sc.Client
	fleet.URL = c.String("url")
	cfg := drill.Config{
		Run:         storm.Config{Fleet: fleet, Duration: sc.Duration},
		AllowRemote: c.StringSlice("allow-remote"), RestartCmd: c.String("restart-cmd"), At: at,
	}
	if !c.Bool("quiet") {
		cfg.Log, cfg.Run.Log = c.App.ErrWriter, c.App.ErrWriter
	}
	return drill.PolicyRunner(cfg, func(policy string) any { return settings.with("policy", policy, "seed") })
}
