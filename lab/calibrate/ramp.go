package main

import (
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// machineCosts are a real run's own CPU costs, measured before its event
// from its resources.csv and timeline.csv: what -from gives the model as
// the machine's (--cpu-per-connect, --cpu-costs ping=).
type machineCosts struct {
	// Loadgen and Target are each end's CPU per first connect in µs over
	// the ramp alone: from the run's start to the first 100 ms in which
	// every client was connected, as summary.json's cpu_us_per_connect
	// (which, before 2026-12-07, ran on to the event, and so also charged
	// the first connects with the idle fleet's pings after the ramp: at
	// 250,000 clients, a ping every 25 s, about a quarter of the target's
	// figure).
	Loadgen, Target float64
	// Ping is both ends' CPU per keepalive ping in µs, over the idle
	// fleet between the ramp and the event (its pings counted from the
	// connects, on the loadgen's sweeps); 0 when that window holds fewer
	// than minPingShare of the fleet's pings, or less than minPingCPU of
	// CPU.
	Ping float64
	// RampEnd is when every client was connected, s from the start.
	RampEnd float64
}

// minPingCPU is the least CPU, in seconds, the ping window must hold for
// Ping to be measured: a hundred times the resolution of resources.csv's
// cpu_s.
const minPingCPU = 1.0

// minPingShare is the fewest pings, as a share of the fleet, the ping
// window must hold for Ping to be measured. With fewer, its CPU is the
// idle processes' own (timers, the sampler, the runtime), not their
// pings': a million clients pinging every 100 s, their ramp over at 60 s
// and the event at 150 s, have one sweep in the window, which pinged the
// 344 clients connected in the first 100 ms; its 3.1 CPU-s gave 9,109 µs
// a ping, and the simulator given that cost never brought its targets
// back.
const minPingShare = 0.1

// measureCosts returns the machineCosts of the real run in dir, whose
// fleet pinged every interval with pongTimeout (0: no pings); ok is false
// when the run has no event, no full ramp before it, or no resource
// samples.
func measureCosts(dir string, s *summary, interval, pongTimeout time.Duration) (machineCosts, bool) {
	var mc machineCosts
	if len(s.Events) == 0 || len(s.Recovery) == 0 {
		return mc, false
	}
	event := s.Events[0].StartS
	before := s.Recovery[0].ConnectedBefore
	tl := readCSV(filepath.Join(dir, "timeline.csv"))
	if len(tl) < 2 || before <= 0 {
		return mc, false
	}
	tcol, ccol, scol := column(tl[0], "t_s"), column(tl[0], "connected"), column(tl[0], "successes")
	if tcol < 0 || ccol < 0 || scol < 0 {
		return mc, false
	}
	type bucket struct{ t, successes float64 }
	var buckets []bucket
	mc.RampEnd = -1
	for _, r := range tl[1:] {
		t, _ := strconv.ParseFloat(r[tcol], 64)
		n, _ := strconv.Atoi(r[ccol])
		k, _ := strconv.ParseFloat(r[scol], 64)
		if t >= event {
			break
		}
		buckets = append(buckets, bucket{t, k})
		if mc.RampEnd < 0 && n >= before {
			mc.RampEnd = t + 0.1
		}
	}
	if mc.RampEnd < 0 {
		return mc, false
	}
	cpu := roleCPU(filepath.Join(dir, "resources.csv"))
	lg, tg := cpu["loadgen"], cpu["target"]
	if len(lg) < 2 || len(tg) < 2 {
		return mc, false
	}
	mc.Loadgen = 1e6 * (lg.at(mc.RampEnd) - lg.at(lg[0].t)) / float64(before)
	mc.Target = 1e6 * (tg.at(mc.RampEnd) - tg.at(tg[0].t)) / float64(before)

	// The pings of [a, b]. A loadgen reactor pings at its sweeps, every
	// tick from the run's start (loadgen keepalive: a quarter of the
	// shorter of the interval and the pong timeout), each connection whose
	// last bytes from the server are an interval old: a client connected at
	// t is pinged at the first sweep at or after t+interval, then an
	// interval apart while the fleet is idle. A sweep's pings take the
	// cores a few seconds, so [a, b] runs from a sweep to the last sweep
	// before the event, and counts the pings of the sweeps in [a, b).
	if interval <= 0 {
		return mc, true
	}
	tick := max(min(interval, pongTimeout)/4, time.Millisecond).Seconds()
	a := math.Ceil((mc.RampEnd+1)/tick) * tick
	b := math.Floor((event-0.5)/tick) * tick
	if b-a < tick {
		return mc, true
	}
	iv := interval.Seconds()
	pings := 0.0
	for _, k := range buckets {
		for p := math.Ceil((k.t+iv)/tick-1e-9) * tick; p < b; p += iv {
			if p >= a {
				pings += k.successes
			}
		}
	}
	if used := lg.at(b) - lg.at(a) + tg.at(b) - tg.at(a); pings >= minPingShare*float64(before) && used >= minPingCPU {
		mc.Ping = 1e6 * used / pings
	}
	return mc, true
}

// cpuSeries is one role's cumulative CPU seconds over time.
type cpuSeries []struct{ t, cpu float64 }

// at returns the role's cumulative CPU at t, interpolated between samples.
func (c cpuSeries) at(t float64) float64 {
	i := sort.Search(len(c), func(i int) bool { return c[i].t >= t })
	switch {
	case i == 0:
		return c[0].cpu
	case i == len(c):
		return c[len(c)-1].cpu
	}
	p, q := c[i-1], c[i]
	if q.t == p.t {
		return q.cpu
	}
	return p.cpu + (q.cpu-p.cpu)*(t-p.t)/(q.t-p.t)
}

// roleCPU reads resources.csv's cumulative CPU of each role.
func roleCPU(path string) map[string]cpuSeries {
	rows := readCSV(path)
	out := map[string]cpuSeries{}
	if len(rows) < 2 {
		return out
	}
	tcol, rcol, ccol := column(rows[0], "t_s"), column(rows[0], "role"), column(rows[0], "cpu_s")
	if tcol < 0 || rcol < 0 || ccol < 0 {
		return out
	}
	for _, r := range rows[1:] {
		t, err1 := strconv.ParseFloat(r[tcol], 64)
		c, err2 := strconv.ParseFloat(r[ccol], 64)
		if err1 != nil || err2 != nil || math.IsNaN(c) {
			continue
		}
		out[r[rcol]] = append(out[r[rcol]], struct{ t, cpu float64 }{t, c})
	}
	return out
}

// column returns the index of the column name in header, -1 if none.
func column(header []string, name string) int {
	for i, h := range header {
		if h == name {
			return i
		}
	}
	return -1
}
