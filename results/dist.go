package results

import (
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Dist names one of a Report's five latency distributions. Its text form
// is the distribution's name in summary.json latency_ms and in the .hlog
// file names.
type Dist uint8

// The distributions, in summary.json latency_ms order.
const (
	DistConnect      Dist = iota // Report.Connect
	DistTTR                      // Report.TTR
	DistRTT                      // Report.RTT
	DistResume                   // Report.Resume
	DistRTTScheduled             // Report.RTTScheduled
	NumDists                     // the number of distributions
)

var distNames = [NumDists]string{"connect", "ttr", "message_rtt", "resume", "message_rtt_scheduled"}

// String returns the distribution's name ("connect", "ttr", ...).
func (d Dist) String() string {
	if d < NumDists {
		return distNames[d]
	}
	return fmt.Sprintf("dist(%d)", uint8(d))
}

// MarshalText writes the distribution's name.
func (d Dist) MarshalText() ([]byte, error) {
	if d >= NumDists {
		return nil, fmt.Errorf("results: unknown distribution %d", uint8(d))
	}
	return []byte(distNames[d]), nil
}

// UnmarshalText reads a distribution's name.
func (d *Dist) UnmarshalText(b []byte) error {
	for i, n := range distNames {
		if n == string(b) {
			*d = Dist(i)
			return nil
		}
	}
	return fmt.Errorf("results: unknown distribution %q", b)
}

// Hist returns the address of the report's total histogram of d.
func (r *Report) Hist(d Dist) **hdrhistogram.Histogram {
	switch d {
	case DistConnect:
		return &r.Connect
	case DistTTR:
		return &r.TTR
	case DistRTT:
		return &r.RTT
	case DistResume:
		return &r.Resume
	case DistRTTScheduled:
		return &r.RTTScheduled
	}
	panic(fmt.Sprintf("results: unknown distribution %d", uint8(d)))
}

// ErrHistogramConfig is the error (matched with errors.Is) for a histogram
// whose range or precision is not the one every stampede histogram has
// (1 µs to 1 h, 3 significant digits): merging it would approximate, so it
// is refused.
var ErrHistogramConfig = errors.New("histogram configuration differs")

// checkConfig says whether a histogram of lowest..highest at sigfigs is one
// of stampede's latency histograms.
func checkConfig(lowest, highest, sigfigs int64) error {
	if lowest != histMin || highest != histMax || sigfigs != histSigFigs {
		return fmt.Errorf("results: %w: %d..%d at %d significant digits, want %d..%d at %d",
			ErrHistogramConfig, lowest, highest, sigfigs, histMin, histMax, histSigFigs)
	}
	return nil
}

// CheckHistogram returns an error wrapping ErrHistogramConfig unless h has
// the range and precision of NewHistogram.
func CheckHistogram(h *hdrhistogram.Histogram) error {
	return checkConfig(h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures())
}

// newPacked returns an empty sparse latency histogram of NewHistogram's
// range and precision: its memory grows with the buckets it holds values
// in, not with the range.
func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histMin, histMax, histSigFigs)
}

// decodePacked decodes an encoded histogram (V2 compressed, base64) and
// checks its configuration.
func decodePacked(s string) (*hdrhistogram.PackedHistogram, error) {
	p, err := hdrhistogram.DecodePacked([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("results: decoding a histogram: %w", err)
	}
	if err := checkConfig(p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures()); err != nil {
		return nil, err
	}
	return p, nil
}

// latencyMicros is d in microseconds, clamped to the histograms' range as
// RecordLatency clamps it.
func latencyMicros(d time.Duration) int64 {
	return min(max(int64(d/time.Microsecond), histMin), histMax)
}
