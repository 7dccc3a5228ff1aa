package backoff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// This file renders what `stampede policy` shows: one client's schedule and
// a fleet's first-retry spread, as text for a person and as JSON for a
// script. Output depends only on the data (never on the terminal), so the
// same seed prints byte-identical output.

// Schedule is one client's delays before retries 1..n after a disconnect.
type Schedule struct {
	// Policy is the policy that produced the delays.
	Policy Policy
	// Seed and Client identify the draws.
	Seed, Client uint64
	// Delays holds the delay before retry i+1 at index i.
	Delays []time.Duration
	// Requested is how many delays were asked for; more than len(Delays)
	// when the policy's MaxAttempts stopped the schedule early.
	Requested int
}

// Schedule returns the delays before retries 1..n of one client, stopping
// early where the policy's MaxAttempts says the client gives up.
func (p Policy) Schedule(seed, client uint64, n int) Schedule {
	k := n
	if p.MaxAttempts > 0 && k > p.MaxAttempts {
		k = p.MaxAttempts
	}
	if p.Library.Name != "" {
		k = n // libraryDelays stops where the client gives up
	}
	return Schedule{Policy: p, Seed: seed, Client: client, Delays: p.Delays(seed, client, k), Requested: n}
}

// WriteText writes one delay per line as time.Duration.String ("1s",
// "1m0s"), nothing else, so the output can be piped.
func (s Schedule) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, d := range s.Delays {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonDelay is a duration as a string and in nanoseconds.
type jsonDelay struct {
	Attempt int    `json:"attempt"`
	Delay   string `json:"delay"`
	NS      int64  `json:"delay_ns"`
}

// MarshalJSON renders the schedule with each delay as a duration string and
// in nanoseconds.
func (s Schedule) MarshalJSON() ([]byte, error) {
	out := struct {
		Policy    string      `json:"policy"`
		Seed      uint64      `json:"seed"`
		Client    uint64      `json:"client"`
		Requested int         `json:"requested"`
		Attempts  int         `json:"policy_attempts"`
		Delays    []jsonDelay `json:"delays"`
	}{s.Policy.String(), s.Seed, s.Client, s.Requested, s.Policy.Limit(), make([]jsonDelay, len(s.Delays))}
	for i, d := range s.Delays {
		out.Delays[i] = jsonDelay{i + 1, d.String(), int64(d)}
	}
	return json.Marshal(out)
}

// MarshalJSON renders the spread with durations as strings and in
// nanoseconds, and the window counts in time order.
func (s Spread) MarshalJSON() ([]byte, error) {
	windows := s.Windows
	if windows == nil {
		windows = []uint32{}
	}
	return json.Marshal(struct {
		Policy     string   `json:"policy"`
		Seed       uint64   `json:"seed"`
		Clients    int      `json:"clients"`
		Window     string   `json:"window"`
		WindowNS   int64    `json:"window_ns"`
		First      string   `json:"first"`
		FirstNS    int64    `json:"first_ns"`
		Last       string   `json:"last"`
		LastNS     int64    `json:"last_ns"`
		Peak       uint32   `json:"peak"`
		Mean       float64  `json:"mean"`
		PeakToMean float64  `json:"peak_to_mean"`
		Windows    []uint32 `json:"windows"`
	}{s.Policy.String(), s.Seed, s.Clients, s.Window.String(), int64(s.Window),
		s.First.String(), int64(s.First), s.Last.String(), int64(s.Last),
		s.Peak, s.Mean, s.PeakToMean, windows})
}

// Text histogram layout.
const (
	// BarWidth is the length of the longest bar, in characters.
	BarWidth = 60
	// maxRows bounds the rows of the histogram; beyond it, adjacent windows
	// are summed into one row, and the header says so.
	maxRows = 600
	// minEmptyRun is the shortest run of empty rows folded into one line.
	minEmptyRun = 3
)

// row is one line of the histogram: one row of windows, or a folded run of
// empty ones.
type row struct {
	label string
	count uint64
	empty int // > 0: a folded run of this many empty rows
}

// WriteText writes the spread as a text histogram, one row per window (or
// per group of windows when there are more than a few hundred), with a bar
// of up to BarWidth '#' scaled to the fullest row. Runs of three or more
// empty rows are folded into one line that says how many it stands for.
// The last lines give the first and last arrival, peak, mean and
// peak-to-mean per window.
func (s Spread) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "first retries of %d clients, policy %s, seed %d\n", s.Clients, s.Policy, s.Seed)
	if s.Clients == 0 || len(s.Windows) == 0 {
		b.WriteString("no clients\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	group := (len(s.Windows) + maxRows - 1) / maxRows
	rowWidth := time.Duration(group) * s.Window
	if group > 1 {
		fmt.Fprintf(&b, "%d windows of %s; each row sums %d of them (%s)\n", len(s.Windows), s.Window, group, rowWidth)
	}
	counts := make([]uint64, 0, (len(s.Windows)+group-1)/group)
	for i := 0; i < len(s.Windows); i += group {
		var n uint64
		for _, c := range s.Windows[i:min(i+group, len(s.Windows))] {
			n += uint64(c)
		}
		counts = append(counts, n)
	}
	var rows []row
	var top uint64
	for i := 0; i < len(counts); {
		j := i
		for j < len(counts) && counts[j] == 0 {
			j++
		}
		if j-i >= minEmptyRun {
			label := fmt.Sprintf("%s-%s", time.Duration(i)*rowWidth, time.Duration(j-1)*rowWidth)
			rows = append(rows, row{label: label, empty: j - i})
			i = j
			continue
		}
		rows = append(rows, row{label: (time.Duration(i) * rowWidth).String(), count: counts[i]})
		top = max(top, counts[i])
		i++
	}
	labelWidth := len("start")
	for _, r := range rows {
		labelWidth = max(labelWidth, len(r.label))
	}
	countWidth := max(len("count"), len(fmt.Sprint(top)))
	fmt.Fprintf(&b, "%*s  %*s\n", labelWidth, "start", countWidth, "count")
	unit := "windows"
	if group > 1 {
		unit = "rows"
	}
	for _, r := range rows {
		if r.empty > 0 {
			fmt.Fprintf(&b, "%*s  %*d  (%d empty %s folded)\n", labelWidth, r.label, countWidth, 0, r.empty, unit)
			continue
		}
		bar := 0
		if top > 0 && r.count > 0 {
			bar = int((r.count*BarWidth + top - 1) / top) // round up: any arrival shows
		}
		line := fmt.Sprintf("%*s  %*d  %s", labelWidth, r.label, countWidth, r.count, strings.Repeat("#", bar))
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "first %s, last %s\n", s.First, s.Last)
	fmt.Fprintf(&b, "peak %d per %s, mean %.1f per %s over %d windows, peak-to-mean %.2f\n",
		s.Peak, s.Window, s.Mean, s.Window, len(s.Windows), s.PeakToMean)
	_, err := io.WriteString(w, b.String())
	return err
}
