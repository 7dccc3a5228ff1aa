package storm

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
)

// Progress aggregates the workers' live counters and prints a status line
// every Interval: elapsed time, connected/total, attempts and failures per
// second by class, and the chaos event under way.
type Progress struct {
	// W receives the lines; nil prints nothing.
	W io.Writer
	// Interval between lines; zero means every 2 s.
	Interval time.Duration
	// Clients is the fleet's size.
	Clients int
	// Event, if set, names the chaos event under way ("" for none).
	Event func() string

	mu      sync.Mutex
	start   time.Time
	workers map[int]loadgen.Stats
	last    loadgen.Stats
	lastAt  time.Time
}

// Update records one worker's counters; safe for concurrent use.
func (p *Progress) Update(worker int, pr cluster.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers == nil {
		p.workers = map[int]loadgen.Stats{}
	}
	p.workers[worker] = pr.Stats
}

// Total returns the sum of the workers' latest counters.
func (p *Progress) Total() loadgen.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total()
}

func (p *Progress) total() loadgen.Stats {
	var t loadgen.Stats
	for _, s := range p.workers {
		t.Add(&s)
	}
	return t
}

// Run prints a line every Interval from start until done is closed.
func (p *Progress) Run(start time.Time, done <-chan struct{}) {
	if p.W == nil {
		return
	}
	iv := p.Interval
	if iv <= 0 {
		iv = 2 * time.Second
	}
	p.mu.Lock()
	p.start, p.lastAt = start, start
	p.mu.Unlock()
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			fmt.Fprintln(p.W, p.line(now))
		}
	}
}

// line renders one status line.
func (p *Progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.total()
	secs := now.Sub(p.lastAt).Seconds()
	if secs <= 0 {
		secs = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  connected %d/%d  attempts %.0f/s", now.Sub(p.start).Seconds(), cur.Connected, p.Clients,
		float64(cur.Attempts-p.last.Attempts)/secs)
	type cls struct {
		name string
		rate float64
	}
	var fails []cls
	for i := range cur.Failures {
		if d := cur.Failures[i] - p.last.Failures[i]; d > 0 {
			fails = append(fails, cls{connerr.Class(i).String(), float64(d) / secs})
		}
	}
	sort.Slice(fails, func(i, j int) bool { return fails[i].rate > fails[j].rate })
	if len(fails) > 0 {
		b.WriteString("  failures/s")
		for _, f := range fails {
			fmt.Fprintf(&b, " %s=%.0f", f.name, f.rate)
		}
	}
	if d := cur.MsgDelivered - p.last.MsgDelivered; d > 0 {
		fmt.Fprintf(&b, "  msg %.0f/s", float64(d)/secs)
	}
	if n := cur.StoppedCount(); n > 0 {
		fmt.Fprintf(&b, "  stopped %d", n)
	}
	if p.Event != nil {
		if ev := p.Event(); ev != "" {
			fmt.Fprintf(&b, "  [%s]", ev)
		}
	}
	p.last, p.lastAt = cur, now
	return b.String()
}
