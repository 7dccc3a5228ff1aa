package live

import (
	"errors"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// HTTPSnapshot is an HTTP fleet's run so far (stampede http --clients):
// what its results folder will hold, as far as it has gone.
type HTTPSnapshot struct {
	// Summary is the fleet's summary so far: its "http" object, its
	// config and the run's length up to now.
	Summary *summary.Summary
	// Timeline counts the attempts per 100 ms by answer so far.
	Timeline results.HTTPTimeline
	// Latency holds the latency distributions so far by the report's
	// names ("http", "http_attempt"), in microseconds.
	Latency map[string]*hdrhistogram.Histogram
}

// HTTPFigures are an HTTP fleet's figures in a frame: the requests sent
// and answered per 100 ms, the Retry-After herd, the totals so far.
type HTTPFigures struct {
	// Sent is the attempts (first ones and retries) sent in the last
	// whole 100 ms window; Answers splits them by answer ("2xx", "429",
	// "5xx", "other status", "no answer"), counted once answered.
	Sent    uint64            `json:"sent_per_100ms"`
	Answers map[string]uint64 `json:"answers_per_100ms"`
	// Offered is the offered load per 100 ms (first attempts only).
	Offered float64 `json:"offered_per_100ms"`
	// PeakSent is the most attempts sent in one 100 ms window so far:
	// the herd of retries against the offered load; PeakRejected the
	// most 429 and 5xx answers in one.
	PeakSent     uint64 `json:"peak_sent_per_100ms"`
	PeakRejected uint64 `json:"peak_rejected_per_100ms"`
	// The totals so far (summary.json's "http" figures of the same
	// names).
	Requests           uint64  `json:"requests"`
	Attempts           uint64  `json:"attempts"`
	Succeeded          uint64  `json:"succeeded"`
	Goodput            float64 `json:"goodput_per_s"`
	Amplification      float64 `json:"amplification"`
	RetryAfterSeen     uint64  `json:"retry_after_seen"`
	RetryAfterHonoured uint64  `json:"retry_after_honoured"`
	EarlyRetries       uint64  `json:"early_retries"`
	Abandoned          uint64  `json:"abandoned"`
}

// buildHTTP is build for an HTTP fleet: its figures, its failures by
// class, its SLOs so far, and the data of report.html's HTTP plots. An
// HTTP fleet has no events, so no recovery.
func buildHTTP(s Snapshot) (Frame, *report.Run, error) {
	if s.HTTP.Summary == nil || s.HTTP.Summary.HTTP == nil {
		return Frame{}, nil, errors.New("an HTTP snapshot without its summary")
	}
	tl := s.HTTP.Timeline
	run := &report.Run{Name: s.Label, Label: s.Label, Summary: s.HTTP.Summary, HTTP: &tl, Latency: s.HTTP.Latency}
	if run.Latency == nil {
		run.Latency = map[string]*hdrhistogram.Histogram{}
	}
	data, err := report.DataJSON([]*report.Run{run})
	if err != nil {
		return Frame{}, nil, err
	}
	h := run.Summary.HTTP
	f := Frame{State: "running", T: round3(s.At.Seconds()), Seed: s.Seed, Clients: s.Clients, Data: data,
		Events: []Mark{}, Recovery: []Recovery{}, Failures: httpFailures(h),
		HTTP: httpFigures(h, &tl, httpBucket(s.At)-1)}
	f.SLO = sloStates(slo.EvalSLOs(s.SLO, run.Summary))
	return f, run, nil
}

// httpFigures are h's figures with those of the timeline's window last
// (none when it has not begun).
func httpFigures(h *results.HTTP, tl *results.HTTPTimeline, last int) *HTTPFigures {
	f := &HTTPFigures{Answers: map[string]uint64{}, Offered: h.OfferedPerS * results.HTTPBucketWidth.Seconds(),
		Requests: h.Requests, Attempts: h.Attempts, Succeeded: h.Succeeded, Goodput: h.GoodputPerS, Amplification: h.Amplification,
		RetryAfterSeen: h.RetryAfterSeen, RetryAfterHonoured: h.RetryAfterHonoured, EarlyRetries: h.EarlyRetries, Abandoned: h.Abandoned}
	if tl == nil {
		return f
	}
	for _, b := range tl.Buckets {
		f.PeakSent, f.PeakRejected = max(f.PeakSent, b.Attempts), max(f.PeakRejected, b.Rejected())
	}
	if last < 0 || last >= len(tl.Buckets) {
		return f
	}
	b := tl.Buckets[last]
	f.Sent = b.Attempts
	for k, v := range map[string]uint64{"2xx": b.OK, "429": b.TooMany, "5xx": b.ServerErr, "other status": b.OtherStatus, "no answer": b.ConnErr} {
		if v > 0 {
			f.Answers[k] = v
		}
	}
	return f
}

// httpFailures are the attempts that failed so far by class: each
// status but a 2xx ("429", "503"), each connection class ("timeout",
// "refused").
func httpFailures(h *results.HTTP) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range h.Statuses {
		if v > 0 && !strings.HasPrefix(k, "2") {
			out[k] = v
		}
	}
	return out
}

// finalHTTP fills the last frame's figures of an HTTP fleet's run r.
func finalHTTP(f *Frame, r *report.Run) {
	h := r.Summary.HTTP
	f.Failures = httpFailures(h)
	last := -1
	if r.HTTP != nil {
		last = len(r.HTTP.Buckets) - 1
	}
	f.HTTP = httpFigures(h, r.HTTP, last)
}

// httpBucket is the HTTP timeline's window holding at.
func httpBucket(at time.Duration) int { return int(at / results.HTTPBucketWidth) }
