package results

import (
	"strings"
	"testing"
	"time"
)

// TestHTTPTimeline checks the buckets, the peak of rejected answers and
// the CSV.
func TestHTTPTimeline(t *testing.T) {
	var tl HTTPTimeline
	tl.Add(0, 200)
	tl.Add(50*time.Millisecond, 429)
	tl.Add(250*time.Millisecond, 529)
	tl.Add(260*time.Millisecond, 503)
	tl.Add(270*time.Millisecond, 0)
	tl.Add(280*time.Millisecond, 404)
	if got := tl.PeakRejected(); got != 2 {
		t.Errorf("PeakRejected = %d, want 2", got)
	}
	var b strings.Builder
	if err := tl.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "t_s,attempts,ok_2xx,status_429,status_5xx,status_other,conn_error\n" +
		"0.0,2,1,1,0,0,0\n0.1,0,0,0,0,0,0\n0.2,4,0,0,2,1,1\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestHTTPSLOs checks the HTTP figures: values from the http object, and
// null (failing) in a run without one.
func TestHTTPSLOs(t *testing.T) {
	h := &Summary{HTTP: &HTTP{Requests: 10, Attempts: 30, Amplification: 3, GoodputPerS: 4.5, EarlyRetries: 2,
		LatencyMS: Latency{P99: 1500, Count: 10}}}
	for _, tc := range []struct {
		expr   string
		sum    *Summary
		pass   bool
		isNull bool
	}{
		{"goodput>0", h, true, false},
		{"goodput>0", &Summary{}, false, true},
		{"goodput>0", &Summary{HTTP: &HTTP{}}, false, false},
		{"amplification<=3", h, true, false},
		{"amplification<2", h, false, false},
		{"amplification<2", &Summary{HTTP: &HTTP{}}, false, true},
		{"early_retries==0", h, false, false},
		{"abandoned==0", h, true, false},
		{"http_p99<=1.5s", h, true, false},
		{"http_p99<1s", h, false, false},
		{"http_attempt_p99<1s", h, false, true},
	} {
		s, err := ParseSLO(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		r := s.Eval(tc.sum)
		if r.Pass != tc.pass || (r.Value == nil) != tc.isNull {
			t.Errorf("%s: pass %v, value %v (%s); want pass %v, null %v", tc.expr, r.Pass, r.Value, r.Detail, tc.pass, tc.isNull)
		}
	}
}
