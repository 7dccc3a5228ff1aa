package cluster

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/results"
)

// WireReport is a results.Report as it travels between processes: the
// counters as JSON, each histogram in HdrHistogram's compressed V2 encoding
// (base64 text, as HdrHistogram's own log tools read it), so the coordinator merges
// exact histograms instead of averaging percentiles.
type WireReport struct {
	Report  *results.Report `json:"report"`
	Connect string          `json:"connect_hdr"`
	TTR     string          `json:"ttr_hdr"`
	RTT     string          `json:"rtt_hdr"`
	Resume  string          `json:"resume_hdr"`
	// RTTScheduled is Report.RTTScheduled; absent from an older worker's
	// report, which then decodes to an empty histogram.
	RTTScheduled string `json:"rtt_scheduled_hdr,omitempty"`
}

// EncodeReport prepares r for the wire.
func EncodeReport(r *results.Report) (WireReport, error) {
	w := WireReport{Report: r}
	for _, p := range [...]struct {
		dst *string
		h   *hdrhistogram.Histogram
	}{{&w.Connect, r.Connect}, {&w.TTR, r.TTR}, {&w.RTT, r.RTT}, {&w.Resume, r.Resume}, {&w.RTTScheduled, r.RTTScheduled}} {
		if p.h == nil {
			continue
		}
		b, err := p.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return w, fmt.Errorf("cluster: encoding histogram: %w", err)
		}
		*p.dst = string(b)
	}
	return w, nil
}

// Decode rebuilds the report with its histograms.
func (w WireReport) Decode() (*results.Report, error) {
	if w.Report == nil {
		return nil, fmt.Errorf("cluster: final message without a report")
	}
	r := w.Report
	for _, p := range [...]struct {
		src string
		dst **hdrhistogram.Histogram
	}{{w.Connect, &r.Connect}, {w.TTR, &r.TTR}, {w.RTT, &r.RTT}, {w.Resume, &r.Resume}, {w.RTTScheduled, &r.RTTScheduled}} {
		if len(p.src) == 0 {
			*p.dst = results.NewHistogram()
			continue
		}
		h, err := hdrhistogram.Decode([]byte(p.src))
		if err != nil {
			return nil, fmt.Errorf("cluster: decoding histogram: %w", err)
		}
		*p.dst = h
	}
	return r, nil
}
