package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/sim"
)

// herdCosts are a real run's CPU costs in its herd, from its event's
// Ready to the end of the first 100 ms in which 90 % of the clients
// connected before it were back (the last sample if never): what each
// end's processes spent there, all their work included (the connected
// clients' pings too), per operation the model charges. They are what
// -herd-from gives the model in place of the ramp's first connects
// (--cpu-costs attempt=,upgrade=,accept=): in a herd a connect costs more
// than in the ramp (lab/records/simulator.md).
type herdCosts struct {
	// Attempt is the loadgen's CPU per attempt in µs, less Upgrade for
	// each attempt upgraded; Upgrade is the loadgen's per upgrade, the
	// ramp's first connect's share (sim.CPUCosts.PerConnect); Accept is
	// the target's CPU per upgrade.
	Attempt, Upgrade, Accept float64
	// LoadgenPerAttempt is the loadgen's CPU per attempt in µs, its
	// upgrades included.
	LoadgenPerAttempt float64
	// From and To are the window, s from the run's start; Attempts and
	// Upgrades what the loadgens counted in it (timeline.csv).
	From, To           float64
	Attempts, Upgrades float64
}

// herdShare is the share of clients connected before the event whose
// return ends the herd's window.
const herdShare = 0.9

// measureHerd returns the herdCosts of the real run in dir, whose loadgen
// spent rampLoadgen µs per first connect in its ramp (machineCosts). ok is
// false when the run has no event or no Ready, or its window holds no
// upgrade or no resource samples.
func measureHerd(dir string, s *summary, rampLoadgen float64) (herdCosts, bool) {
	var h herdCosts
	if len(s.Events) == 0 || len(s.Recovery) == 0 || s.Events[0].ReadyS <= 0 || !(rampLoadgen > 0) {
		return h, false
	}
	h.From = s.Events[0].ReadyS
	goal := herdShare * float64(s.Recovery[0].ConnectedBefore)
	tl := readCSV(filepath.Join(dir, "timeline.csv"))
	if len(tl) < 2 {
		return h, false
	}
	tcol, ccol, acol, scol := column(tl[0], "t_s"), column(tl[0], "connected"), column(tl[0], "attempts"), column(tl[0], "successes")
	if tcol < 0 || ccol < 0 || acol < 0 || scol < 0 {
		return h, false
	}
	for _, r := range tl[1:] {
		t, _ := strconv.ParseFloat(r[tcol], 64)
		if t < h.From-1e-9 {
			continue
		}
		n, _ := strconv.ParseFloat(r[ccol], 64)
		a, _ := strconv.ParseFloat(r[acol], 64)
		k, _ := strconv.ParseFloat(r[scol], 64)
		h.Attempts += a
		h.Upgrades += k
		h.To = t + 0.1
		if n >= goal {
			break
		}
	}
	cpu := roleCPU(filepath.Join(dir, "resources.csv"))
	lg, tg := cpu["loadgen"], cpu["target"]
	if len(lg) < 2 || len(tg) < 2 || h.Upgrades <= 0 || h.To <= h.From {
		return h, false
	}
	lgCPU := 1e6 * (lg.at(h.To) - lg.at(h.From))
	tgCPU := 1e6 * (tg.at(h.To) - tg.at(h.From))
	up := sim.CPUCosts{}.PerConnect(time.Duration(rampLoadgen*1e3), 0).Upgrade
	h.Upgrade = float64(up) / 1e3
	h.LoadgenPerAttempt = lgCPU / h.Attempts
	h.Attempt = max(0.001, (lgCPU-h.Upgrades*h.Upgrade)/h.Attempts)
	h.Accept = tgCPU / h.Upgrades
	return h, true
}

// cpuCosts returns h as simulate's --cpu-costs takes it, with ping as
// machineFlags gives it ("": the model's default).
func (h herdCosts) cpuCosts(ping string) string {
	s := "attempt=" + usTenth(h.Attempt) + ",upgrade=" + usTenth(h.Upgrade) + ",accept=" + usTenth(h.Accept)
	if ping != "" {
		s += ",ping=" + ping
	}
	return s
}

// String says what h measured, for a run's line.
func (h herdCosts) String() string {
	return fmt.Sprintf("herd %.1f-%.1f s (Ready to %.0f %% back): %.0f attempts, %.0f upgrades; loadgen %.1f µs an attempt (%.1f µs less its upgrades' %.1f µs), target %.1f µs an upgrade",
		h.From, h.To, 100*herdShare, h.Attempts, h.Upgrades, h.LoadgenPerAttempt, h.Attempt, h.Upgrade, h.Accept)
}
