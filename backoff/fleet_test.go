package backoff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFirstRetrySpread pins the windows of spreads whose answer is known.
func TestFirstRetrySpread(t *testing.T) {
	for _, tc := range []struct {
		name        string
		spec        string
		clients     int
		windows     []uint32
		first, last time.Duration
		peak        uint32
		ratio       float64
	}{
		{
			// docs/metrics.md: all at exactly 1 s -> windows 0..10, peak-to-mean 11.
			name: "fixed 1s", spec: "fixed:initial=1s", clients: 500,
			windows: []uint32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 500},
			first:   time.Second, last: time.Second, peak: 500, ratio: 11,
		},
		{
			// A delay on a window boundary opens that window.
			name: "fixed 100ms", spec: "fixed:initial=100ms", clients: 3,
			windows: []uint32{0, 3},
			first:   100 * ms, last: 100 * ms, peak: 3, ratio: 2,
		},
		{
			// Below one window: everything in window 0.
			name: "fixed 50ms", spec: "fixed:initial=50ms", clients: 7,
			windows: []uint32{7},
			first:   50 * ms, last: 50 * ms, peak: 7, ratio: 1,
		},
		{
			// Equal jitter of 2 s: the first draws of clients 0, 1, 2 are
			// pinned by TestDelaySeeded (equal 1 s), doubled here.
			name: "equal 2s, 3 clients", spec: "equal:initial=2s", clients: 3,
			windows: []uint32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1},
			first:   1549456858, last: 1982585764, peak: 1, ratio: 20.0 / 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := MustParse(tc.spec)
			got := FirstRetrySpread(p, 1, tc.clients)
			if !slices.Equal(got.Windows, tc.windows) {
				t.Errorf("Windows = %v, want %v", got.Windows, tc.windows)
			}
			if got.First != tc.first || got.Last != tc.last || got.Peak != tc.peak || got.PeakToMean != tc.ratio {
				t.Errorf("first %v last %v peak %d ratio %v; want %v %v %d %v", got.First, got.Last, got.Peak, got.PeakToMean, tc.first, tc.last, tc.peak, tc.ratio)
			}
			if want := float64(tc.clients) / float64(len(tc.windows)); got.Mean != want {
				t.Errorf("Mean = %v, want %v", got.Mean, want)
			}
			if got.Clients != tc.clients || got.Window != 100*ms || got.Seed != 1 || got.Policy != p {
				t.Errorf("Spread header = %+v", got)
			}
		})
	}
}

// TestFirstRetrySpreadEmpty: no clients, no windows, no panic.
func TestFirstRetrySpreadEmpty(t *testing.T) {
	for _, n := range []int{0, -5} {
		s := FirstRetrySpread(Policy{}, 1, n)
		if s.Clients != 0 || s.Windows != nil || s.Peak != 0 || s.PeakToMean != 0 {
			t.Errorf("FirstRetrySpread(%d clients) = %+v", n, s)
		}
		var b bytes.Buffer
		if err := s.WriteText(&b); err != nil || !strings.Contains(b.String(), "no clients") {
			t.Errorf("WriteText = %q, %v", b.String(), err)
		}
		if js, err := json.Marshal(s); err != nil || !strings.Contains(string(js), `"windows":[]`) {
			t.Errorf("JSON = %s, %v", js, err)
		}
	}
}

// TestHerdComparison is the acceptance check at its own scale: for
// 100,000 clients, a fixed 1 s interval's first-retry peak-to-mean is
// several times that of jittered exponential backoff with a spread base.
func TestHerdComparison(t *testing.T) {
	const clients = 100_000
	fixed := FirstRetrySpread(MustParse("fixed:initial=1s"), 1, clients)
	jittered := FirstRetrySpread(MustParse("exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms"), 1, clients)
	if fixed.PeakToMean != 11 {
		t.Errorf("fixed peak-to-mean = %v, want 11", fixed.PeakToMean)
	}
	// Base U(100, 500) ms times U(0.5, 1.5): arrivals over [50, 750) ms,
	// eight windows, densest near 250 ms.
	if len(jittered.Windows) != 8 || jittered.PeakToMean < 1.5 || jittered.PeakToMean > 2.5 {
		t.Errorf("jittered: %d windows, peak-to-mean %v; want 8 windows, 1.5..2.5", len(jittered.Windows), jittered.PeakToMean)
	}
	if fixed.PeakToMean < 4*jittered.PeakToMean {
		t.Errorf("peak-to-mean fixed %v vs jittered %v: want fixed at least 4x", fixed.PeakToMean, jittered.PeakToMean)
	}
	t.Logf("100,000 clients, seed 1: fixed peak-to-mean %.2f (peak %d), jittered exp %.2f (peak %d)",
		fixed.PeakToMean, fixed.Peak, jittered.PeakToMean, jittered.Peak)
}

// TestSpreadWriteTextGrouped: beyond maxRows windows, rows sum groups of
// windows and the header says so; the counts still add up to the fleet.
func TestSpreadWriteTextGrouped(t *testing.T) {
	s := FirstRetrySpread(MustParse("full:initial=5m"), 3, 2000)
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.Contains(lines[1], "windows of 100ms; each row sums 5 of them (500ms)") {
		t.Errorf("header line = %q", lines[1])
	}
	if rows := len(lines) - 5; rows > maxRows {
		t.Errorf("%d rows, want at most %d", rows, maxRows)
	}
	total := 0
	for _, l := range lines[3 : len(lines)-2] {
		var label string
		var n int
		if _, err := fmt.Sscan(l, &label, &n); err != nil {
			t.Fatalf("row %q: %v", l, err)
		}
		total += n
	}
	if total != 2000 {
		t.Errorf("rows sum to %d, want 2000", total)
	}
}

// BenchmarkFirstRetrySpread measures the preview of a 100,000-client fleet.
func BenchmarkFirstRetrySpread(b *testing.B) {
	p := MustParse("exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms")
	b.ReportAllocs()
	for b.Loop() {
		FirstRetrySpread(p, 1, 100_000)
	}
}
