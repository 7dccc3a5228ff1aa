package report

import (
	"io"
	"strconv"

	"github.com/stampede-dev/stampede/results"
)

// An HTTP fleet's folder (stampede http --clients) holds its own files:
// http_timeline.csv and two latency logs, no WebSocket timeline. Its page
// shows goodput and attempts over time, the answers by status over time,
// and the latency percentiles, instead of a WebSocket run's plots.

// httpLogs are an HTTP fleet's latency logs and the names the page gives
// them.
var httpLogs = []struct{ file, name string }{
	{results.HTTPLatencyLogFile, "http"},
	{results.HTTPAttemptLogFile, "http_attempt"},
}

// loadHTTP reads an HTTP fleet's files into run with open (Load's).
func loadHTTP(run *Run, open func(string, func(io.Reader) error) error) error {
	if err := open(results.HTTPTimelineFile, func(r io.Reader) (err error) {
		run.HTTP, err = results.ReadHTTPTimelineCSV(r)
		return err
	}); err != nil {
		return err
	}
	for _, l := range httpLogs {
		if err := open(l.file, func(r io.Reader) error {
			h, err := results.ReadHistogramLog(r)
			run.Latency[l.name] = h
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// httpData are an HTTP fleet's plot series over T (seconds, one point
// per 100 ms bucket): per second rates, so goodput reads as the summary's.
type httpData struct {
	T series `json:"t"`
	// Goodput is 2xx answers per second; Attempts every attempt sent.
	Goodput  series `json:"goodput"`
	Attempts series `json:"attempts"`
	// Statuses are the answers per second by kind: 2xx, 429, 5xx, other
	// statuses, no answer (a connection failure); kinds never seen are
	// left out.
	Statuses map[string]series `json:"statuses"`
}

// httpDataOf is the plot data of an HTTP timeline; nil for nil.
func httpDataOf(t *results.HTTPTimeline) *httpData {
	if t == nil {
		return nil
	}
	n := len(t.Buckets)
	perS := 1 / results.HTTPBucketWidth.Seconds()
	d := &httpData{T: make(series, n), Goodput: make(series, n), Attempts: make(series, n), Statuses: map[string]series{}}
	kinds := []struct {
		name string
		of   func(results.HTTPBucket) uint64
	}{
		{"2xx", func(b results.HTTPBucket) uint64 { return b.OK }},
		{"429", func(b results.HTTPBucket) uint64 { return b.TooMany }},
		{"5xx", func(b results.HTTPBucket) uint64 { return b.ServerErr }},
		{"other status", func(b results.HTTPBucket) uint64 { return b.OtherStatus }},
		{"no answer", func(b results.HTTPBucket) uint64 { return b.ConnErr }},
	}
	for i, b := range t.Buckets {
		d.T[i] = round(float64(i)*results.HTTPBucketWidth.Seconds(), 3)
		d.Goodput[i], d.Attempts[i] = float64(b.OK)*perS, float64(b.Attempts)*perS
		for _, k := range kinds {
			v := k.of(b)
			if v > 0 && d.Statuses[k.name] == nil {
				d.Statuses[k.name] = make(series, n)
			}
			if s := d.Statuses[k.name]; s != nil {
				s[i] = float64(v) * perS
			}
		}
	}
	return d
}

// httpV is an HTTP fleet's figures as the page's tables show them.
type httpV struct {
	Method, URL, Policy string
	Figures             []nameValue
	Statuses, Outcomes  []nameValue
	Latency             []latencyV
}

// httpView is the tables of an HTTP fleet's summary; nil for nil.
func httpView(h *results.HTTP) *httpV {
	if h == nil {
		return nil
	}
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	v := &httpV{Method: h.Method, URL: h.URL, Policy: h.Policy,
		Statuses: nonZero(h.Statuses), Outcomes: nonZero(h.Outcomes)}
	v.Figures = []nameValue{
		{"offered /s", f2(h.OfferedPerS)}, {"requests", u(h.Requests)}, {"attempts", u(h.Attempts)},
		{"succeeded", u(h.Succeeded)}, {"goodput /s", f2(h.GoodputPerS)}, {"amplification", f2(h.Amplification)},
		{"retry-after honoured", strconv.FormatBool(h.RetryAfter)},
		{"retry-after seen", u(h.RetryAfterSeen)}, {"retry-after honoured count", u(h.RetryAfterHonoured)},
		{"early retries", u(h.EarlyRetries)}, {"abandoned", u(h.Abandoned)},
		{"not retried (unsafe)", u(h.NotRetriedUnsafe)}, {"peak rejected /100 ms", u(h.PeakRejectedPer100ms)},
	}
	for _, l := range []struct {
		name string
		l    results.Latency
	}{{"request (from scheduled send)", h.LatencyMS}, {"attempt", h.AttemptLatencyMS}} {
		v.Latency = append(v.Latency, latencyOf(l.name, l.l))
	}
	return v
}

// httpCompareV is one HTTP fleet in the runs-side-by-side table.
type httpCompareV struct {
	Name, Policy, Goodput, Amplification, P99 string
	Requests, Succeeded, Abandoned, Early     uint64
	SLO                                       string
}

// httpCompare is the side-by-side table of HTTP fleets; nil unless every
// run is one.
func httpCompare(runs []*Run) []httpCompareV {
	var out []httpCompareV
	for _, r := range runs {
		h := r.Summary.HTTP
		if h == nil {
			return nil
		}
		c := compareRow(r)
		out = append(out, httpCompareV{Name: r.Name, Policy: h.Policy, Goodput: f2(h.GoodputPerS), Amplification: f2(h.Amplification),
			P99: f2(h.LatencyMS.P99), Requests: h.Requests, Succeeded: h.Succeeded, Abandoned: h.Abandoned, Early: h.EarlyRetries, SLO: c.SLO})
	}
	return out
}
