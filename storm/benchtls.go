package storm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/tlsconf"
)

// TLSBenchConfig describes a TLS bench (`stampede bench --tls`): the same
// wss:// storm side by side: the certificate's kind with the ticket keys
// in memory, the same with the keys in a file kept across the restart,
// and ECDSA P-256 instead of RSA with the keys in memory; then Go's crypto/tls handshake cost on this machine.
type TLSBenchConfig struct {
	// Bench is the bench: its Storm must serve wss:// with its ticket
	// keys in memory and restart the target first; its Out is required
	// (the second run's key file is there). Mitigations are set by the
	// bench, and only the first of Policies runs.
	Bench BenchConfig
	// CostHandshakes is how many full and resumed handshakes of each kind
	// measure crypto/tls's cost (tlsconf.MeasureCost); 0 means 200.
	CostHandshakes int
}

// TLSBenchFile is a TLS bench's figures in its folder.
const TLSBenchFile = "tlsbench.json"

// TLSCase is one run of a TLS bench.
type TLSCase struct {
	// Name says what the run was: "rsa-2048, keys in memory".
	Name string `json:"name"`
	// CertKind is its certificate's kind; KeysKept is true when its
	// ticket keys were in a file kept across the restart.
	CertKind string `json:"cert_kind"`
	KeysKept bool   `json:"keys_kept"`
	// Full and Resumed count the fleet's reconnects after the restart
	// (from the first event's start on) by handshake.
	Full    uint64 `json:"full"`
	Resumed uint64 `json:"resumed"`
	// CPUUsPerReconnect is the target's CPU per reconnect; R99S the
	// first event's R99 (summary.json's, null alike).
	CPUUsPerReconnect *float64 `json:"cpu_us_per_reconnect"`
	R99S              *float64 `json:"r99_s"`
	// Target is the target's own handshakes over the run, with their CPU
	// (summary.json tls_handshakes.target); nil when not counted.
	Target *results.TLSHandshakes `json:"target"`
}

// ResumedShare is the resumed reconnects' share, 0 without any.
func (c TLSCase) ResumedShare() float64 {
	return results.TLSHandshakes{Full: c.Full, Resumed: c.Resumed}.ResumedShare()
}

// TLSCost is Go's crypto/tls server CPU per handshake of one kind on this
// machine, measured in the bench's own process.
type TLSCost struct {
	CertKind     string  `json:"cert_kind"`
	Handshakes   int     `json:"handshakes"`
	FullCPUUs    float64 `json:"full_cpu_us"`
	ResumedCPUUs float64 `json:"resumed_cpu_us"`
}

// TLSBench is a TLS bench's outcome.
type TLSBench struct {
	Cases []TLSCase `json:"cases"`
	Cost  []TLSCost `json:"crypto_tls"`
}

// cases returns the bench's runs as mitigations of its server: none
// (keys in memory), the keys kept, and ECDSA instead of RSA when the
// certificate is RSA.
func (cfg TLSBenchConfig) cases() ([]mitigation.Mitigation, error) {
	srv := cfg.Bench.Storm.Target.Server.WithDefaults()
	switch {
	case !srv.TLS:
		return nil, spec.Errorf("Server.TLS", "a TLS bench needs a wss:// target")
	case srv.TLSTicketKeys != "":
		return nil, spec.Errorf("Server.TLSTicketKeys", "a TLS bench keeps the ticket keys in memory in its first run and in its own file in the second")
	case srv.TLSNoTickets:
		return nil, spec.Errorf("Server.TLSNoTickets", "a TLS bench compares resumption: session tickets must be on")
	}
	ms := append([]mitigation.Mitigation{{Kind: mitigation.None}}, mitigation.TLS(srv, filepath.Join(cfg.Bench.Out, "ticket.keys"))...)
	for _, m := range ms {
		if err := m.Check(srv); err != nil {
			return nil, fmt.Errorf("mitigation %s: %w", m, err)
		}
	}
	return ms, nil
}

// BenchTLS runs a TLS bench: its runs (Bench, the schedule's restarts as
// given, abrupt ones included), then crypto/tls's cost for each kind.
func BenchTLS(ctx context.Context, cfg TLSBenchConfig) ([]BenchRun, *TLSBench, error) {
	st := cfg.Bench.Storm
	if st.Schedule == nil || len(st.Schedule.Entries) == 0 || st.Schedule.Entries[0].Event.Kind != chaos.Restart {
		return nil, nil, spec.Errorf("Storm.Schedule", "a TLS bench needs a restart first in the schedule")
	}
	if cfg.Bench.Out == "" {
		return nil, nil, spec.Errorf("Storm.Out", "a TLS bench needs a folder (the ticket-key file of its second run)")
	}
	ms, err := cfg.cases()
	if err != nil {
		return nil, nil, err
	}
	bc := cfg.Bench
	bc.Policies, bc.Mitigations, bc.KeepSchedule = bc.Policies[:min(1, len(bc.Policies))], ms, true
	runs, err := Bench(ctx, bc)
	kind := st.Target.Server.WithDefaults().TLSCertKind
	out := &TLSBench{}
	kinds := []string{kind}
	for i, r := range runs {
		c := TLSCase{Name: kind + ", keys in memory", CertKind: kind}
		switch ms[i].Kind {
		case mitigation.TicketsKept:
			c.Name, c.KeysKept = kind+", keys kept", true
		case mitigation.ECDSA:
			c.CertKind = string(tlsconf.ECDSAP256)
			c.Name = c.CertKind + ", keys in memory"
			kinds = append(kinds, c.CertKind)
		}
		if r.Summary != nil {
			if ferr := c.fill(r.Summary, r.Dir); ferr != nil {
				err = errors.Join(err, ferr)
			}
		}
		out.Cases = append(out.Cases, c)
	}
	if ctx.Err() != nil {
		return runs, out, err
	}
	n := cfg.CostHandshakes
	if n <= 0 {
		n = 200
	}
	for _, k := range kinds {
		cs, _, cerr := tlsconf.MeasureCost(tlsconf.Kind(k), n)
		if cerr != nil {
			err = errors.Join(err, cerr)
			continue
		}
		out.Cost = append(out.Cost, TLSCost{CertKind: k, Handshakes: n, FullCPUUs: cs.FullCPUUs(), ResumedCPUUs: cs.ResumedCPUUs()})
	}
	return runs, out, errors.Join(err, writeTLSBench(cfg.Bench.Out, out))
}

// fill sets the case's figures from its run's summary and timeline.csv
// in dir.
func (c *TLSCase) fill(s *summary.Summary, dir string) error {
	if t, ok := s.Resources[results.RoleTarget]; ok {
		c.CPUUsPerReconnect = t.CPUUsPerReconnect
	}
	if len(s.Recovery) > 0 {
		c.R99S = s.Recovery[0].R99S
	}
	if h, ok := s.TLSHandshakes[results.RoleTarget]; ok {
		c.Target = &h
	}
	if len(s.Events) == 0 || dir == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, folder.TimelineFile))
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := folder.ReadTimelineCSV(f)
	if err != nil {
		return err
	}
	from := s.Events[0].StartS - results.Tick.Seconds() // the restart's bucket on
	for _, r := range rows {
		if r.T > from {
			c.Full += uint64(r.TLSFull)
			c.Resumed += uint64(r.TLSResumed)
		}
	}
	return nil
}

// writeTLSBench writes the bench's figures to dir's TLSBenchFile.
func writeTLSBench(dir string, b *TLSBench) error {
	j, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return folder.WriteBytes(filepath.Join(dir, TLSBenchFile), append(j, '\n'))
}

// Write prints the bench: each case's reconnects by handshake, the
// target's CPU and R99, the full:resumed CPU ratio beside crypto/tls's
// measured now, and the two kinds side by side.
func (b *TLSBench) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "reconnects after the restart\tfull\tresumed\tresumed %\ttarget µs/reconnect\tµs/full hs\tµs/resumed hs\tR99 s")
	for _, c := range b.Cases {
		var full, res *float64
		if c.Target != nil {
			full, res = c.Target.FullCPUUs, c.Target.ResumedCPUUs
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\n", c.Name, c.Full, c.Resumed, 100*c.ResumedShare(),
			report.FloatText(c.CPUUsPerReconnect, 0), report.FloatText(full, 0), report.FloatText(res, 0), report.FloatText(c.R99S, 2))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(b.Cases) > 1 {
		if t := b.Cases[1].Target; t != nil && t.FullCPUUs != nil && t.ResumedCPUUs != nil {
			fmt.Fprintf(w, "target full:resumed handshake CPU (%s): %.1fx\n", b.Cases[1].Name, *t.FullCPUUs / *t.ResumedCPUUs)
		}
	}
	if len(b.Cases) > 2 {
		r, e := b.Cases[0], b.Cases[2]
		fmt.Fprintf(w, "%s against %s, keys in memory: target CPU per full handshake %s against %s µs, R99 %s against %s s\n",
			e.CertKind, r.CertKind, fullText(e), fullText(r), report.FloatText(e.R99S, 2), report.FloatText(r.R99S, 2))
	}
	if len(b.Cost) > 0 {
		fmt.Fprintln(w, "Go crypto/tls server CPU per handshake, loopback, this machine, now:")
		for _, c := range b.Cost {
			fmt.Fprintf(w, "  %-10s full %.0f µs, resumed %.0f µs: %.1fx (%d of each)\n", c.CertKind, c.FullCPUUs, c.ResumedCPUUs, c.FullCPUUs/c.ResumedCPUUs, c.Handshakes)
		}
	}
	return nil
}

// A TLS bench's defaults: an RSA-2048 certificate (a full handshake costs
// the server several times an ECDSA one), first connects at TLSBenchRamp
// a second (a 2-core machine signs some hundreds a second, and the
// loadgen shares it), the restart once they are done.
const (
	TLSBenchCertKind = string(tlsconf.RSA2048)
	TLSBenchRamp     = 500.0
)

// TLSBenchTiming returns a TLS bench's schedule and length for clients
// first connecting at ramp a second: an abrupt restart, down 2 s, 10 s
// after the last first connect is due, and 90 s for the herd of
// handshakes to come back.
func TLSBenchTiming(clients int, ramp float64) (schedule string, length time.Duration) {
	at := 10 * time.Second
	if ramp > 0 {
		at += time.Duration(math.Ceil(float64(clients)/ramp)) * time.Second
	}
	return fmt.Sprintf("at %s restart abrupt down=2s", at), at + 90*time.Second
}

// fullText is a case's target CPU per full handshake in µs, "-" without.
func fullText(c TLSCase) string {
	if c.Target == nil {
		return report.FloatText(nil, 0)
	}
	return report.FloatText(c.Target.FullCPUUs, 0)
}
