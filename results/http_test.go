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
