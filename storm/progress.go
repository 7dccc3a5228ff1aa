package storm

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/loadgen"
)

// DefaultProgressInterval is the time between plain progress lines.
const DefaultProgressInterval = 5 * time.Second

// MinProgressInterval is the shortest time between progress lines (1ns
// wrote 1.14 million lines in 3 s).
const MinProgressInterval = 100 * time.Millisecond

// terminalRefresh is how often the terminal's status line is redrawn, and
// rateWindow the span its rates are averaged over: the workers report once
// a second, so a one-second rate would alias between 0 and twice the truth.
const (
	terminalRefresh = time.Second
	rateWindow      = 3 * time.Second
)

// clearLine returns the cursor to column 0 and clears to the end of the
// line (ANSI CR + EL).
const clearLine = "\r\x1b[K"

// ProgressMode says how progress is shown.
type ProgressMode int

const (
	// ProgressAuto is a status line on a terminal, plain lines otherwise.
	ProgressAuto ProgressMode = iota
	// ProgressPlain prints a line every Interval: for CI and pipes.
	ProgressPlain
	// ProgressTerminal rewrites one status line in place every second.
	ProgressTerminal
)

// Progress sums the workers' live counters, shows them while a run goes
// and hands each new total to Observe (the Prometheus exporter): the
// status line and the metrics come from the same figures.
//
//	workers ──Update──> Progress ──> status line / plain lines (W)
//	                          └────> Observe (metrics)
//	chaos, child logs ──Log()──┘ (each on its own line, status redrawn)
type Progress struct {
	// W receives the status; nil shows nothing (counters are still summed
	// and observed).
	W io.Writer
	// Interval is the time between plain lines; zero means
	// DefaultProgressInterval. A terminal's status line is redrawn every
	// second whatever Interval says.
	Interval time.Duration
	// Mode chooses the terminal or plain form; ProgressAuto asks W.
	Mode ProgressMode
	// Width is the terminal's width in columns, to which the status line
	// is cut so that it never wraps; zero asks the terminal each redraw.
	Width int
	// Clients is the fleet's size.
	Clients int
	// Event, if set, names the chaos event under way ("" for none).
	Event func() string
	// Observe, if set, is called after each update with the offset from
	// the start, the fleet's summed counters and its attempt rate per
	// 100 ms (each worker's rate over its own last interval, summed).
	Observe func(at time.Duration, total loadgen.Stats, attemptsPer100ms float64)

	mu      sync.Mutex // guards the counters below
	start   time.Time
	workers map[int]*workerStats
	samples []sample // totals at the latest lines, for rates

	out    sync.Mutex // guards writes to W and the fields below
	term   bool       // W shows a status line
	status string     // the status line on screen ("" if none)
	part   []byte     // an incomplete line written to Log()

	quit, done chan struct{}
}

// workerStats is one worker's latest counters and attempt rate.
type workerStats struct {
	at     time.Time
	s      loadgen.Stats
	per100 float64
}

// sample is the fleet's total at one line.
type sample struct {
	at time.Time
	s  loadgen.Stats
}

// Start begins showing progress from start, the fleet's start barrier.
func (p *Progress) Start(start time.Time) {
	p.mu.Lock()
	p.start = start
	p.samples = []sample{{at: start}}
	p.mu.Unlock()
	if p.W == nil {
		return
	}
	p.out.Lock()
	p.term = p.Mode == ProgressTerminal || (p.Mode == ProgressAuto && isTerminal(p.W))
	quit, done := make(chan struct{}), make(chan struct{})
	p.quit, p.done = quit, done
	p.out.Unlock()
	every := p.Interval
	if every <= 0 {
		every = DefaultProgressInterval
	}
	if p.term {
		every = terminalRefresh
	}
	go p.loop(every, quit, done)
}

// Stop ends the progress display and clears the status line; it returns
// when nothing more will be written. Safe to call without Start.
func (p *Progress) Stop() {
	p.out.Lock()
	quit, done := p.quit, p.done
	p.quit = nil
	p.out.Unlock()
	if quit == nil {
		return
	}
	close(quit)
	<-done
	p.out.Lock()
	defer p.out.Unlock()
	if p.status != "" {
		io.WriteString(p.W, clearLine)
		p.status = ""
	}
}

func (p *Progress) loop(every time.Duration, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	p.mu.Lock()
	start := p.start
	p.mu.Unlock()
	if d := time.Until(start); d > 0 { // a start barrier ahead: tick on its time axis
		w := time.NewTimer(d)
		defer w.Stop()
		select {
		case <-quit:
			return
		case <-w.C:
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case now := <-t.C:
			p.show(p.line(now))
		}
	}
}

// show writes one status: rewritten in place on a terminal, a plain line
// otherwise.
func (p *Progress) show(s string) {
	p.out.Lock()
	defer p.out.Unlock()
	if !p.term {
		io.WriteString(p.W, s+"\n")
		return
	}
	p.status = cut(s, p.width())
	io.WriteString(p.W, clearLine+p.status)
}

// Log returns a writer for everything else printed while the run goes
// (chaos lines, child processes' stderr): each whole line is printed on
// its own, and the status line redrawn under it.
func (p *Progress) Log() io.Writer { return logWriter{p} }

type logWriter struct{ p *Progress }

func (w logWriter) Write(b []byte) (int, error) {
	p := w.p
	if p.W == nil {
		return len(b), nil
	}
	p.out.Lock()
	defer p.out.Unlock()
	p.part = append(p.part, b...)
	i := strings.LastIndexByte(string(p.part), '\n')
	if i < 0 {
		return len(b), nil
	}
	lines := string(p.part[:i+1])
	p.part = append(p.part[:0], p.part[i+1:]...)
	if p.status != "" {
		lines = clearLine + lines + p.status
	}
	if _, err := io.WriteString(p.W, lines); err != nil {
		return len(b), err
	}
	return len(b), nil
}

// Update records one worker's counters; safe for concurrent use.
func (p *Progress) Update(worker int, pr agent.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers == nil {
		p.workers = map[int]*workerStats{}
	}
	w := p.workers[worker]
	if w == nil {
		w = &workerStats{at: p.start}
		p.workers[worker] = w
	}
	if d := pr.At.Sub(w.at); d > 0 && !w.at.IsZero() && pr.Stats.Attempts >= w.s.Attempts {
		w.per100 = float64(pr.Stats.Attempts-w.s.Attempts) * float64(100*time.Millisecond) / float64(d)
	}
	w.at, w.s = pr.At, pr.Stats
	if p.Observe != nil {
		var per100 float64
		for _, w := range p.workers {
			per100 += w.per100
		}
		p.Observe(pr.At.Sub(p.start), p.total(), per100)
	}
}

// Total returns the sum of the workers' latest counters.
func (p *Progress) Total() loadgen.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total()
}

func (p *Progress) total() loadgen.Stats {
	var t loadgen.Stats
	for _, w := range p.workers {
		t.Add(&w.s)
	}
	return t
}

// line renders the status at now: elapsed time, connected/fleet, attempts
// and failures per second by class, messages per second, clients stopped,
// the chaos event under way. Plain lines give rates since the previous
// line; the terminal's, over about the last rateWindow.
func (p *Progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.total()
	base := p.sampleAt(now, cur)
	secs := now.Sub(base.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	rate := func(cur, old uint64) float64 {
		if cur < old {
			return 0
		}
		return float64(cur-old) / secs
	}
	clients := p.Clients
	if clients == 0 {
		clients = cur.Clients
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6.1fs  connected %d/%d  attempts %s/s", now.Sub(p.start).Seconds(), cur.Connected, clients,
		perSecond(rate(cur.Attempts, base.s.Attempts)))
	writeFailures(&b, func(c connerr.Class) float64 { return rate(cur.Failures[c], base.s.Failures[c]) })
	if cur.MsgSent > 0 || cur.MsgDelivered > 0 {
		fmt.Fprintf(&b, "  msg/s sent %s", perSecond(rate(cur.MsgSent, base.s.MsgSent)))
		if cur.MsgAcked > 0 { // stampede mode
			fmt.Fprintf(&b, " acked %s", perSecond(rate(cur.MsgAcked, base.s.MsgAcked)))
		}
		fmt.Fprintf(&b, " delivered %s", perSecond(rate(cur.MsgDelivered, base.s.MsgDelivered)))
	}
	if n := cur.StoppedCount(); n > 0 {
		fmt.Fprintf(&b, "  stopped %d", n)
	}
	if p.Event != nil {
		if ev := p.Event(); ev != "" {
			fmt.Fprintf(&b, "  [%s]", ev)
		}
	}
	if lag := p.lag(now); lag >= staleAfter {
		fmt.Fprintf(&b, "  (counts from %s ago)", lag.Round(time.Second))
	}
	return b.String()
}

// sampleAt records the counts cur at now and returns the sample the rates
// are taken from: for plain lines the previous line's, for the terminal's
// the one about rateWindow ago.
func (p *Progress) sampleAt(now time.Time, cur loadgen.Stats) sample {
	if len(p.samples) == 0 {
		p.samples = []sample{{at: p.start}}
	}
	base := p.samples[len(p.samples)-1] // plain: since the previous line
	if p.term {
		base = p.samples[0]
		for _, s := range p.samples {
			if now.Sub(s.at) >= rateWindow-terminalRefresh/2 {
				base = s
			}
		}
	}
	p.samples = append(p.samples, sample{now, cur})
	if len(p.samples) > 8 {
		p.samples = slices.Delete(p.samples, 0, len(p.samples)-8)
	}
	return base
}

// writeFailures writes the failure classes whose rate is above zero, the
// most frequent first.
func writeFailures(b *strings.Builder, rate func(connerr.Class) float64) {
	type cls struct {
		c    connerr.Class
		rate float64
	}
	var fails []cls
	for _, c := range connerr.Classes() {
		if r := rate(c); r > 0 {
			fails = append(fails, cls{c, r})
		}
	}
	slices.SortStableFunc(fails, func(a, b cls) int {
		switch {
		case a.rate > b.rate:
			return -1
		case a.rate < b.rate:
			return 1
		}
		return 0
	})
	if len(fails) > 0 {
		b.WriteString("  failures/s")
		for _, f := range fails {
			fmt.Fprintf(b, " %s=%s", f.c, perSecond(f.rate))
		}
	}
}

// staleAfter is how old the oldest worker's counts may be before a line
// says so: workers report every agent.ProgressInterval, and a
// coordinator that a large fleet starves of CPU reads their reports late
// (tens of seconds at a million clients on two cores), so the counts then
// trail the clock the line shows.
const staleAfter = 3 * agent.ProgressInterval

// lag returns how old, at now, the oldest worker's counts are (0 before
// any report).
func (p *Progress) lag(now time.Time) time.Duration {
	var oldest time.Time
	for _, w := range p.workers {
		if oldest.IsZero() || w.at.Before(oldest) {
			oldest = w.at
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return max(now.Sub(oldest), 0)
}

// perSecond formats a rate: whole numbers from 10 up, one decimal below
// (a small fleet's 0.2 failures/s is not 0), no trailing ".0".
func perSecond(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strings.TrimSuffix(strconv.FormatFloat(r, 'f', 1, 64), ".0")
}

// width returns the terminal's width in columns, 0 if unknown.
func (p *Progress) width() int {
	if p.Width > 0 {
		return p.Width
	}
	return terminalWidth(p.W)
}

// cut shortens s to fewer than width runes, so that the status line never
// wraps (a wrapped line cannot be rewritten with a carriage return).
func cut(s string, width int) string {
	if width <= 1 {
		return s
	}
	r := []rune(s)
	if len(r) < width {
		return s
	}
	return string(r[:width-1])
}
