package folder

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// The logs decode with hdrhistogram-go's own log reader to the same
// percentiles summary.json reports.
func TestHistogramLogsRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 123e6, time.UTC)
	r := results.NewReport(start, 3)
	for i := range 1000 {
		results.RecordLatency(r.Connect, time.Duration(100+i*i)*time.Microsecond)
		results.RecordLatency(r.TTR, time.Duration(i)*7*time.Millisecond)
	}
	results.RecordLatency(r.RTT, 1500*time.Microsecond)
	results.RecordLatency(r.RTTScheduled, 4200*time.Microsecond)
	// Resume: nothing recorded.
	sum := summary.Summarize(summary.Input{Report: r, End: 30 * time.Second})
	dir := t.TempDir()
	if err := WriteHistogramLogs(dir, r, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	got := map[string]results.Latency{}
	for _, l := range results.HistogramLogs(r) {
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
		got[l.Name] = results.Percentiles(h)
		if h.StartTimeMs() != start.UnixMilli() || h.EndTimeMs() != start.UnixMilli()+30000 {
			t.Errorf("%s: interval %d..%d ms, want %d..+30000", l.File, h.StartTimeMs(), h.EndTimeMs(), start.UnixMilli())
		}
	}
	for name, want := range map[string]results.Latency{
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
	h, err := ReadHistogramLogFile(filepath.Join(dir, results.ConnectLogFile))
	if err != nil || results.Percentiles(h) != sum.LatencyMS.Connect {
		t.Errorf("ReadHistogramLogFile: %v", err)
	}
}

// TestIntervalLogs: a 40 s run's logs hold one interval per second, with
// their start and length, and hdrhistogram-go's reader merges them into
// exactly the percentiles of summary.json.
func TestIntervalLogs(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 123e6, time.UTC)
	rep := results.NewReport(start, 100)
	s := results.NewStream(rep)
	for i := range 4000 {
		at := time.Duration(i) * 10 * time.Millisecond // 0 .. 39.99 s
		s.Record(results.DistConnect, at, time.Duration(100+i*i%50_000)*time.Microsecond)
		if i%3 == 0 {
			s.Record(results.DistTTR, at, time.Duration(i)*time.Millisecond)
		}
	}
	s.Record(results.DistRTT, 12500*time.Millisecond, 2*time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sum := summary.Summarize(summary.Input{Report: rep, End: 40 * time.Second})
	dir := t.TempDir()
	if err := WriteHistogramLogs(dir, rep, 40*time.Second); err != nil {
		t.Fatal(err)
	}
	want := map[results.Dist]results.Latency{results.DistConnect: sum.LatencyMS.Connect, results.DistTTR: sum.LatencyMS.TTR, results.DistRTT: sum.LatencyMS.MessageRTT,
		results.DistResume: sum.LatencyMS.Resume, results.DistRTTScheduled: sum.LatencyMS.MessageRTTScheduled}
	for _, l := range results.HistogramLogs(rep) {
		b, err := os.ReadFile(filepath.Join(dir, l.File))
		if err != nil {
			t.Fatal(err)
		}
		// The interval lines: start i s from the run's start, 1 s long.
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, `"`) {
				lines = append(lines, line)
			}
		}
		if len(lines) != 40 {
			t.Fatalf("%s: %d intervals, want 40", l.File, len(lines))
		}
		for i, line := range lines {
			if p := fmt.Sprintf("%d.000000,1.000000,", i); !strings.HasPrefix(line, p) {
				t.Errorf("%s: interval %d starts %q, want %q", l.File, i, line[:min(len(line), 30)], p)
			}
		}
		lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(b))
		merged := results.NewHistogram()
		n := 0
		for {
			h, err := lr.NextIntervalHistogram()
			if err != nil {
				t.Fatal(err)
			}
			if h == nil {
				break
			}
			if l.Dist == results.DistConnect && h.TotalCount() != 100 {
				t.Errorf("connect interval %d holds %d values, want 100", n, h.TotalCount())
			}
			merged.Merge(h)
			n++
		}
		if n != 40 || results.Percentiles(merged) != want[l.Dist] || !merged.Equals(*rep.Hist(l.Dist)) {
			t.Errorf("%s: %d intervals merge to %+v, summary %+v", l.File, n, results.Percentiles(merged), want[l.Dist])
		}
	}
	if sum.LatencyMS.Connect.Count != 4000 || sum.LatencyMS.TTR.Count != 1334 || sum.LatencyMS.MessageRTT.Count != 1 {
		t.Errorf("summary counts %+v", sum.LatencyMS)
	}
}
