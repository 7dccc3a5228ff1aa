package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// HTTP is the summary.json "http" object of an HTTP fleet run
// (docs/results.md "HTTP fleets"). Counts are whole numbers; a logical
// request is one scheduled request with all its attempts.
type HTTP struct {
	// URL and Method name what was sent (the URL without its password).
	URL    string `json:"url"`
	Method string `json:"method"`
	// Policy is the retry policy's spec; RetryAfter is false when the
	// run ignored Retry-After hints.
	Policy     string `json:"policy"`
	RetryAfter bool   `json:"retry_after"`
	// OfferedPerS is the offered load in logical requests per second.
	OfferedPerS float64 `json:"offered_per_s"`
	// DeadlineS is each logical request's deadline from its scheduled
	// send, in seconds; null when there was none (--deadline unset).
	DeadlineS *float64 `json:"deadline_s"`
	// Requests counts logical requests sent (the first attempt went out).
	Requests uint64 `json:"requests"`
	// Attempts counts every attempt, first ones and retries.
	Attempts uint64 `json:"attempts"`
	// Succeeded counts logical requests that finally got a 2xx.
	Succeeded uint64 `json:"succeeded"`
	// GoodputPerS is Succeeded per second of the run: from the first
	// scheduled send until the last request ended (never less than the
	// scheduled duration), so retries after the schedule count in both.
	GoodputPerS float64 `json:"goodput_per_s"`
	// Amplification is Attempts per logical request (0 without requests).
	Amplification float64 `json:"amplification"`
	// Statuses counts the answers of every attempt by status code ("200",
	// "429"); attempts without an answer are counted by class ("refused").
	Statuses map[string]uint64 `json:"statuses"`
	// Outcomes counts logical requests by how they ended: "ok" (2xx),
	// "status_NNN" for a final other status, or the connection class of
	// the last attempt ("refused", "timeout"), "deadline" for requests
	// that ran out of their deadline (--deadline: cancelled at it, or
	// given up because the next wait would outlast it), or "unfinished"
	// for requests still running when the run's grace period ended.
	Outcomes map[string]uint64 `json:"outcomes"`
	// RetryAfterSeen counts answers that carried a Retry-After header;
	// RetryAfterHonoured those whose retry waited by it.
	RetryAfterSeen     uint64 `json:"retry_after_seen"`
	RetryAfterHonoured uint64 `json:"retry_after_honoured"`
	// EarlyRetries counts attempts sent sooner after the previous answer
	// than its Retry-After allowed: 0 when hints are honoured.
	EarlyRetries uint64 `json:"early_retries"`
	// Abandoned counts logical requests the client gave up: retries
	// exhausted, a Retry-After above the cap, or the deadline.
	Abandoned uint64 `json:"abandoned"`
	// NotRetriedUnsafe counts logical requests that got a retryable
	// failure but were not retried: a POST or PATCH without an
	// Idempotency-Key.
	NotRetriedUnsafe uint64 `json:"not_retried_unsafe"`
	// LatencyMS is from each logical request's scheduled send to its end
	// (coordinated omission corrected: a late send counts its delay).
	LatencyMS Latency `json:"latency_ms"`
	// AttemptLatencyMS is each attempt's time to its answer or error.
	AttemptLatencyMS Latency `json:"attempt_latency_ms"`
	// PeakRejectedPer100ms is the most 429 and 5xx answers in one 100 ms
	// window of the timeline.
	PeakRejectedPer100ms uint64 `json:"peak_rejected_per_100ms"`
}

// HTTP file names of a results folder.
const (
	HTTPTimelineFile   = "http_timeline.csv"
	HTTPLatencyLogFile = "http_latency.hlog"
	HTTPAttemptLogFile = "http_attempt.hlog"
)

// HTTPBucketWidth is the width of an HTTPTimeline bucket.
const HTTPBucketWidth = 100 * time.Millisecond

// HTTPBucket counts the attempts sent in one 100 ms window, by answer.
type HTTPBucket struct {
	// Attempts counts attempts sent in the window.
	Attempts uint64
	// OK, TooMany, ServerErr, OtherStatus and ConnErr split them by
	// answer: 2xx, 429, 5xx (529 included), any other status, and no
	// answer (a connection failure).
	OK, TooMany, ServerErr, OtherStatus, ConnErr uint64
}

// Rejected is the window's 429 and 5xx answers.
func (b HTTPBucket) Rejected() uint64 { return b.TooMany + b.ServerErr }

// HTTPTimeline is an HTTP fleet's timeline: Buckets[i] covers the
// attempts sent from i*100 ms to (i+1)*100 ms after the run's start.
type HTTPTimeline struct {
	Buckets []HTTPBucket
}

// Add counts one attempt sent at off after the start with status (0 for
// no answer). A negative offset counts in the first bucket.
func (t *HTTPTimeline) Add(off time.Duration, status int) {
	i := max(int(off/HTTPBucketWidth), 0)
	for len(t.Buckets) <= i {
		t.Buckets = append(t.Buckets, HTTPBucket{})
	}
	b := &t.Buckets[i]
	b.Attempts++
	switch {
	case status == 0:
		b.ConnErr++
	case status/100 == 2:
		b.OK++
	case status == 429:
		b.TooMany++
	case status/100 == 5:
		b.ServerErr++
	default:
		b.OtherStatus++
	}
}

// httpTimelineHeader is http_timeline.csv's header.
const httpTimelineHeader = "t_s,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error"

// PeakRejected returns the most 429 and 5xx answers in one bucket.
func (t *HTTPTimeline) PeakRejected() uint64 {
	var p uint64
	for _, b := range t.Buckets {
		p = max(p, b.Rejected())
	}
	return p
}

// WriteCSV writes the timeline as http_timeline.csv: a header, then one
// row per bucket, t_s being the bucket's start in seconds from the run's
// start (the time column of every CSV a run writes).
func (t *HTTPTimeline) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, httpTimelineHeader)
	for i, b := range t.Buckets {
		fmt.Fprintf(bw, "%s,%d,%d,%d,%d,%d,%d\n", strconv.FormatFloat((time.Duration(i)*HTTPBucketWidth).Seconds(), 'f', 1, 64),
			b.Attempts, b.OK, b.TooMany, b.ServerErr, b.OtherStatus, b.ConnErr)
	}
	return bw.Flush()
}

// ReadHTTPTimelineCSV reads an http_timeline.csv as WriteCSV wrote it
// (its header checked; a row's t_s places it, so a missing row is an
// empty bucket). A folder written before the CSVs shared one time column
// has t_ms, milliseconds, instead; it is read too.
func ReadHTTPTimelineCSV(r io.Reader) (*HTTPTimeline, error) {
	header := httpTimelineHeader
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("empty, want the header %q", header)
	}
	got := strings.TrimSpace(sc.Text())
	ms := got == "t_ms"+strings.TrimPrefix(header, "t_s")
	if got != header && !ms {
		return nil, fmt.Errorf("header %q, want %q", got, header)
	}
	t := &HTTPTimeline{}
	for line := 2; sc.Scan(); line++ {
		f := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(f) != 7 {
			return nil, fmt.Errorf("line %d: %d fields, want 7", line, len(f))
		}
		var v [7]uint64
		if !ms { // seconds to one decimal: the bucket's start in ms
			sec, err := strconv.ParseFloat(f[0], 64)
			if err != nil || !(sec >= 0) || sec > 1<<24 {
				return nil, fmt.Errorf("line %d: t_s %q is not a time", line, f[0])
			}
			f[0] = strconv.FormatInt(int64(math.Round(sec*1000)), 10)
		}
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q is not a count", line, s)
			}
			v[i] = n
		}
		i := v[0] / uint64(HTTPBucketWidth.Milliseconds())
		if i > 1<<24 || v[0]%uint64(HTTPBucketWidth.Milliseconds()) != 0 {
			return nil, fmt.Errorf("line %d: %s ms is not a bucket's start", line, f[0])
		}
		for uint64(len(t.Buckets)) <= i {
			t.Buckets = append(t.Buckets, HTTPBucket{})
		}
		t.Buckets[i] = HTTPBucket{Attempts: v[1], OK: v[2], TooMany: v[3], ServerErr: v[4], OtherStatus: v[5], ConnErr: v[6]}
	}
	return t, sc.Err()
}
