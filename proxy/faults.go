package proxy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Faults is a set of faults a proxy applies at once: a chaos schedule's
// "proxy" event (docs/chaos.md). Zero fields are faults not applied.
type Faults struct {
	// Latency delays data in each direction.
	Latency time.Duration
	// Jitter varies the delay uniformly within Latency ± Jitter
	// (never more than Latency).
	Jitter time.Duration
	// Bandwidth limits each direction of each connection, in bytes per
	// second; 0 is unlimited.
	Bandwidth int64
	// Reset resets every connection (TCP RST), new and established.
	Reset bool
	// Blackhole swallows all data and never closes.
	Blackhole bool
	// Loss is the probability, 0..1, that a connection is dropped.
	Loss float64
}

// String returns the faults as " key=value" words in canonical order
// (latency, jitter, bandwidth, loss, reset, blackhole), each with a leading
// space; "" when there are none.
func (f Faults) String() string {
	var b strings.Builder
	if f.Latency > 0 {
		b.WriteString(" latency=" + f.Latency.String())
	}
	if f.Jitter > 0 {
		b.WriteString(" jitter=" + f.Jitter.String())
	}
	if f.Bandwidth > 0 {
		b.WriteString(" bandwidth=" + formatBandwidth(f.Bandwidth))
	}
	if f.Loss > 0 {
		b.WriteString(" loss=" + formatPercent(f.Loss))
	}
	if f.Reset {
		b.WriteString(" reset")
	}
	if f.Blackhole {
		b.WriteString(" blackhole")
	}
	return b.String()
}

// formatBandwidth writes bytes per second so that the text parses back to
// the same integer: with the largest decimal unit (GB, MB, KB) that divides
// it, else the largest binary one (GiB, MiB, KiB), else in the largest
// decimal unit not above it with as many decimals as needed ("12.5KB/s").
func formatBandwidth(bps int64) string {
	units := []struct {
		name  string
		bytes int64
	}{{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if bps%u.bytes == 0 {
			return strconv.FormatInt(bps/u.bytes, 10) + u.name + "/s"
		}
	}
	for _, u := range units[:3] {
		if bps >= u.bytes {
			digits := len(strconv.FormatInt(u.bytes, 10)) - 1
			frac := fmt.Sprintf("%0*d", digits, bps%u.bytes)
			return strconv.FormatInt(bps/u.bytes, 10) + "." + strings.TrimRight(frac, "0") + u.name + "/s"
		}
	}
	return strconv.FormatInt(bps, 10) + "B/s"
}

// LossDecimals is the most digits a loss percentage may have after the
// point; the schedule parser refuses more. Bounding it is what makes
// formatPercent exact: p/100*100 is within
// a few ulps of p, far less than half of the last kept digit.
const LossDecimals = 6

// formatPercent writes a 0..1 probability as a percentage such as "1.5%".
func formatPercent(p float64) string {
	s := strconv.FormatFloat(p*100, 'f', LossDecimals, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return s + "%"
}
