package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/storm"
)

// benchTLSDefaults gives a bench --tls the TLS bench's defaults for what
// the command line left unset: an RSA-2048 certificate, first connects
// at storm.TLSBenchRamp, and its schedule and length (TLSBenchTiming).
func benchTLSDefaults(c *cli.Context, cfg *storm.Config) error {
	if c.Bool("mitigations") {
		return fmt.Errorf("--tls: bench --tls compares TLS set-ups; with --mitigations, bench the mitigations of a wss:// target with --tls-cert-kind instead")
	}
	if !c.IsSet("tls-cert-kind") && cfg.Target.Server.CertFile == "" {
		cfg.Target.Server.TLSCertKind = storm.TLSBenchCertKind
	}
	if !c.IsSet("ramp") {
		cfg.Fleet.Ramp = storm.TLSBenchRamp
	}
	// The handshakes are the capacity: no accept rate, and the run's
	// patience (the kernel's SYN retries, the spec's upgrade timeout),
	// not the policy bench's, which would give up on the queue of RSA
	// handshakes before the target signs them.
	if !c.IsSet("accept-rate") {
		cfg.Target.Server.AcceptRate = 0
	}
	if !c.IsSet("syn-retries") {
		cfg.Fleet.SynRetries = 0
	}
	if !c.IsSet("handshake-timeout") {
		cfg.Fleet.HandshakeTimeout = 0 // the spec's default
	}
	text, length := storm.TLSBenchTiming(cfg.Fleet.Clients, cfg.Fleet.Ramp)
	if !c.IsSet("chaos") && !c.IsSet("chaos-file") {
		sched, err := chaos.Parse(text)
		if err != nil {
			return err
		}
		cfg.Schedule, cfg.ScheduleText = sched, text
	}
	if !c.IsSet("duration") {
		cfg.Duration = length
	}
	return nil
}

// benchTLS runs a TLS bench and prints its runs' comparison table, then
// the TLS figures.
func benchTLS(c *cli.Context, bc storm.BenchConfig) error {
	if len(bc.Policies) > 1 {
		return fmt.Errorf("--policies: bench --tls compares TLS set-ups for one policy, not %d", len(bc.Policies))
	}
	if len(bc.Policies) == 0 {
		bc.Policies = []string{benchTLSPolicy}
	}
	ctx, stop := interruptible(c)
	defer stop()
	runs, tb, err := storm.BenchTLS(ctx, storm.TLSBenchConfig{Bench: bc})
	if len(runs) > 0 {
		if perr := writeBenchTable(c, runs, bc.Out); perr != nil {
			return perr
		}
	}
	if tb != nil {
		fmt.Fprintln(c.App.Writer)
		if perr := tb.Write(c.App.Writer); perr != nil {
			return perr
		}
		fmt.Fprintf(c.App.Writer, "figures: %s\n", filepath.Join(bc.Out, storm.TLSBenchFile))
	}
	if err != nil {
		return runError(err)
	}
	return nil
}

// benchTLSPolicy is the policy a bench --tls runs without --policy: the
// bench's exponential backoff with jitter and a per-client spread.
var benchTLSPolicy = storm.DefaultBenchPolicies[2]
