package slo

import (
	"testing"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// TestHTTPSLOs checks the HTTP figures: values from the http object, and
// null (failing) in a run without one.
func TestHTTPSLOs(t *testing.T) {
	h := &summary.Summary{HTTP: &results.HTTP{Requests: 10, Attempts: 30, Amplification: 3, GoodputPerS: 4.5, EarlyRetries: 2,
		LatencyMS: results.Latency{P99: 1500, Count: 10}}}
	for _, tc := range []struct {
		expr   string
		sum    *summary.Summary
		pass   bool
		isNull bool
	}{
		{"goodput>0", h, true, false},
		{"goodput>0", &summary.Summary{}, false, true},
		{"goodput>0", &summary.Summary{HTTP: &results.HTTP{}}, false, false},
		{"amplification<=3", h, true, false},
		{"amplification<2", h, false, false},
		{"amplification<2", &summary.Summary{HTTP: &results.HTTP{}}, false, true},
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
