package advise

import (
	"fmt"
	"time"

	"github.com/stampede-dev/stampede/sim"
)

// Capacity is what a server admits of a reconnect herd: a server that
// accepts A connections a second brings N clients back in no less than
// N/A seconds, and takes at most A × 0.1 s + backlog attempts in one
// 100 ms window without dropping a SYN (docs/advise.md).
type Capacity struct {
	// AcceptRate is the connections per second the server admits.
	AcceptRate float64
	// Backlog is the connections its accept queues hold: every process's,
	// or the load balancer's.
	Backlog int
	// Source says where the figures came from, for a person: "flags",
	// or the measured figure of a results folder.
	Source string
}

// Per100ms is what the server takes in one 100 ms window.
func (c Capacity) Per100ms() float64 { return c.AcceptRate*0.1 + float64(c.Backlog) }

// Bound is the physical bound of a fleet: clients over the accept rate,
// the least time after ready in which all of them can be back.
func (c Capacity) Bound(clients int) time.Duration {
	if c.AcceptRate <= 0 {
		return 0
	}
	return time.Duration(float64(clients) / c.AcceptRate * float64(time.Second))
}

// CapacityOf is the capacity of the simulated server of cfg: the accept
// rate (or, without one, every process's upgrade capacity with its
// handshake cost), the backlog of every process, and the load balancer's
// rate and queue when it has one and they are lower. A wss:// server's
// processes take each reconnect's TLS handshake too
// (sim.Config.ReconnectTLSCost: full when the restart lost the ticket
// keys): their upgrade capacity with it bounds the accept rate. With
// cfg.Cores, both ends share the machine's cores, so the accept rate is
// at most the cores over what one connect costs both ends at the fleet
// (sim.CPUCosts.AtFleet): the CPU bound.
func CapacityOf(cfg sim.Config) Capacity {
	d := sim.Defaults()
	procs := cfg.Procs
	if procs == 0 {
		procs = max(1, (cfg.Clients+sim.PerProcess-1)/sim.PerProcess)
	}
	backlog := cfg.Backlog
	if backlog == 0 {
		backlog = d.Backlog
	}
	per := cfg.ProcCapacity
	if per <= 0 {
		per = d.ProcCapacity
	}
	hs := cfg.ReconnectTLSCost()
	upgrades := float64(procs) / (1/per + cfg.HandshakeCost.Seconds() + hs.Seconds())
	rate := cfg.AcceptRate
	if rate <= 0 || hs > 0 && upgrades < rate {
		rate = upgrades
	}
	c := Capacity{AcceptRate: rate, Backlog: procs * backlog, Source: "flags"}
	if hs > 0 {
		c.Source = fmt.Sprintf("flags; wss://: %s of the target's CPU per reconnect's TLS handshake", hs)
	}
	if cfg.Cores > 0 {
		k := cfg.CPU.AtFleet(cfg.Clients)
		conn := k.LoadgenPerConnect() + k.TargetPerConnect() + hs
		if cpu := cfg.Cores / conn.Seconds(); cpu < c.AcceptRate {
			c.AcceptRate = cpu
			c.Source += fmt.Sprintf("; %g cores at %s of both ends' CPU a connect", cfg.Cores, conn.Round(100*time.Nanosecond))
		}
	}
	if cfg.LB != nil {
		if cfg.LB.Rate > 0 && cfg.LB.Rate < c.AcceptRate {
			c.AcceptRate = cfg.LB.Rate
		}
		q := cfg.LB.Queue
		if q == 0 {
			q = d.Backlog
		}
		c.Backlog = q
	}
	return c
}
