package results

import (
	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency is one latency distribution of summary.json, in milliseconds.
// Percentiles are HdrHistogram's: the highest value equivalent to the
// recorded one at three significant digits, so they can exceed the true
// sample by at most 0.1 %.
type Latency struct {
	// P50, P90 and P99 are percentiles in ms.
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	// Max is the largest recorded value in ms.
	Max float64 `json:"max"`
	// Count is the number of recorded values; 0 means every figure is 0
	// because nothing was recorded, not because it was instant: the SLO
	// gates read such a figure as null and fail it (docs/results.md "SLO
	// gates"). The figures stay numbers so summary.json readers keep
	// working.
	Count int64 `json:"count"`
	// Mean is the mean in ms.
	Mean float64 `json:"mean"`
}

// Latencies holds the run's latency distributions of summary.json.
type Latencies struct {
	// Connect is the connect latency: SYN to 101 (or to resumed).
	Connect Latency `json:"connect"`
	// TTR is each client's time to recover (docs/metrics.md "Client TTR").
	TTR Latency `json:"ttr"`
	// MessageRTT is the message round trip: send to ACK, or echo.
	MessageRTT Latency `json:"message_rtt"`
	// Resume is resume sent to resumed.
	Resume Latency `json:"resume"`
	// MessageRTTScheduled is the message round trip measured from when
	// the message was scheduled to be sent (1/MsgRate per client), not
	// when it went out: MessageRTT corrected for coordinated omission.
	MessageRTTScheduled Latency `json:"message_rtt_scheduled"`
}

// Percentiles summarises a histogram of microseconds (as recorded by
// RecordLatency) in milliseconds. A nil or empty histogram gives all zeros
// and Count 0.
func Percentiles(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	const usPerMs = 1e3 // divide, so 900 µs is exactly 0.9 ms
	return Latency{
		P50:   float64(h.ValueAtQuantile(50)) / usPerMs,
		P90:   float64(h.ValueAtQuantile(90)) / usPerMs,
		P99:   float64(h.ValueAtQuantile(99)) / usPerMs,
		Max:   float64(h.Max()) / usPerMs,
		Count: h.TotalCount(),
		Mean:  h.Mean() / usPerMs,
	}
}
