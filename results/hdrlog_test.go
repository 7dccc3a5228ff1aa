package results

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The logs decode with hdrhistogram-go's own log reader to the same
// percentiles summary.json reports.
func TestHistogramLogsRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 123e6, time.UTC)
	r := NewReport(start, 3)
	for i := range 1000 {
		RecordLatency(r.Connect, time.Duration(100+i*i)*time.Microsecond)
		RecordLatency(r.TTR, time.Duration(i)*7*time.Millisecond)
	}
	RecordLatency(r.RTT, 1500*time.Microsecond)
	RecordLatency(r.RTTScheduled, 4200*time.Microsecond)
	// Resume: nothing recorded.
	sum := Summarize(Input{Report: r, End: 30 * time.Second})
	dir := t.TempDir()
	if err := WriteHistogramLogs(dir, r, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got := map[string]Latency{}
	for _, l := range HistogramLogs(r) {
		f, err := os.Open(filepath.Join(dir, l.File))
		if err != nil {
			t.Fatal(err)
		}
		lr := hdrhistogram.NewHistogramLogReader(f)
		h, err := lr.NextIntervalHistogram()
		if err != nil || h == nil {
			t.Fatalf("%s: first interval: %v, %v", l.File, h, err)
		}
		if next, err := lr.NextIntervalHistogram(); next != nil || err != nil {
			t.Errorf("%s: a second interval: %v, %v", l.File, next, err)
		}
		f.Close()
		got[l.Name] = Percentiles(h)
		if h.StartTimeMs() != start.UnixMilli() || h.EndTimeMs() != start.UnixMilli()+30000 {
			t.Errorf("%s: interval %d..%d ms, want %d..+30000", l.File, h.StartTimeMs(), h.EndTimeMs(), start.UnixMilli())
		}
	}
	for name, want := range map[string]Latency{
		"connect": sum.LatencyMS.Connect, "ttr": sum.LatencyMS.TTR,
		"message_rtt": sum.LatencyMS.MessageRTT, "resume": sum.LatencyMS.Resume,
		"message_rtt_scheduled": sum.LatencyMS.MessageRTTScheduled,
	} {
		if got[name] != want {
			t.Errorf("%s: log percentiles %+v, summary %+v", name, got[name], want)
		}
	}
	if len(got) != 5 || sum.LatencyMS.MessageRTTScheduled.Count != 1 {
		t.Errorf("logs %v, scheduled rtt %+v", got, sum.LatencyMS.MessageRTTScheduled)
	}
	if sum.LatencyMS.Connect.Count != 1000 || sum.LatencyMS.Resume.Count != 0 {
		t.Errorf("counts %d %d", sum.LatencyMS.Connect.Count, sum.LatencyMS.Resume.Count)
	}
	// The report's own histograms are left as they were.
	if r.Connect.StartTimeMs() != 0 {
		t.Error("WriteHistogramLogs stamped the report's histogram")
	}
	h, err := ReadHistogramLogFile(filepath.Join(dir, ConnectLogFile))
	if err != nil || Percentiles(h) != sum.LatencyMS.Connect {
		t.Errorf("ReadHistogramLogFile: %v", err)
	}
}

func TestHistogramLogFormat(t *testing.T) {
	h := NewHistogram()
	RecordLatency(h, 2*time.Second)
	var b bytes.Buffer
	start := time.Date(2026, 11, 29, 12, 0, 0, 250e6, time.UTC)
	if err := WriteHistogramLog(&b, "ttr", h, start, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"#[Histogram log format version 1.3]",
		"#stampede ttr latency in microseconds; interval max in seconds",
		"#[StartTime: 1795953600.250 (seconds since epoch), 2026-11-29T12:00:00.250Z]",
		"#[BaseTime: 1795953600.250 (seconds since epoch)]",
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`,
	}
	if len(lines) != 6 {
		t.Fatalf("log:\n%s", b.String())
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
		}
	}
	if !strings.HasPrefix(lines[5], "0.000000,1.500000,2.000") || !strings.Contains(lines[5], ",HIST") {
		t.Errorf("interval line %q", lines[5])
	}
}

func TestReadHistogramLogMergesIntervals(t *testing.T) {
	var b bytes.Buffer
	start := time.Unix(1_800_000_000, 0)
	for i := range 3 {
		h := NewHistogram()
		RecordLatency(h, time.Duration(i+1)*time.Millisecond)
		if err := WriteHistogramLog(&b, "connect", h, start.Add(time.Duration(i)*time.Second), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ReadHistogramLog(&b)
	if err != nil || h.TotalCount() != 3 || h.Max() != 3001 && h.Max() != 3000 && h.Max() != 3002 {
		t.Errorf("merged: %v count %d max %d", err, h.TotalCount(), h.Max())
	}
	if _, err := ReadHistogramLog(strings.NewReader("0.0,1.0,1.0,HISTnotbase64\n")); err == nil {
		t.Error("a corrupt interval read without error")
	}
}
