package results

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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

// TestIntervalLogs: a 40 s run's logs hold one interval per second, with
// their start and length, and hdrhistogram-go's reader merges them into
// exactly the percentiles of summary.json.
func TestIntervalLogs(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 123e6, time.UTC)
	rep := NewReport(start, 100)
	s := NewStream(rep)
	for i := range 4000 {
		at := time.Duration(i) * 10 * time.Millisecond // 0 .. 39.99 s
		s.Record(DistConnect, at, time.Duration(100+i*i%50_000)*time.Microsecond)
		if i%3 == 0 {
			s.Record(DistTTR, at, time.Duration(i)*time.Millisecond)
		}
	}
	s.Record(DistRTT, 12500*time.Millisecond, 2*time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sum := Summarize(Input{Report: rep, End: 40 * time.Second})
	dir := t.TempDir()
	if err := WriteHistogramLogs(dir, rep, 40*time.Second); err != nil {
		t.Fatal(err)
	}
	want := map[Dist]Latency{DistConnect: sum.LatencyMS.Connect, DistTTR: sum.LatencyMS.TTR, DistRTT: sum.LatencyMS.MessageRTT,
		DistResume: sum.LatencyMS.Resume, DistRTTScheduled: sum.LatencyMS.MessageRTTScheduled}
	for _, l := range HistogramLogs(rep) {
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
		merged := NewHistogram()
		n := 0
		for {
			h, err := lr.NextIntervalHistogram()
			if err != nil {
				t.Fatal(err)
			}
			if h == nil {
				break
			}
			if l.Dist == DistConnect && h.TotalCount() != 100 {
				t.Errorf("connect interval %d holds %d values, want 100", n, h.TotalCount())
			}
			merged.Merge(h)
			n++
		}
		if n != 40 || Percentiles(merged) != want[l.Dist] || !merged.Equals(*rep.Hist(l.Dist)) {
			t.Errorf("%s: %d intervals merge to %+v, summary %+v", l.File, n, Percentiles(merged), want[l.Dist])
		}
	}
	if sum.LatencyMS.Connect.Count != 4000 || sum.LatencyMS.TTR.Count != 1334 || sum.LatencyMS.MessageRTT.Count != 1 {
		t.Errorf("summary counts %+v", sum.LatencyMS)
	}
}

// TestIntervalLogLastCut: the interval the run ends in is cut at the
// run's end; one recorded after the end is written whole.
func TestIntervalLogLastCut(t *testing.T) {
	iv := NewIntervals(time.Second)
	h := NewHistogram()
	RecordLatency(h, time.Millisecond)
	for _, i := range []int{0, 3} {
		if err := iv.Add(IntervalHistogram{Dist: DistTTR, Index: i, Hdr: encoded(t, h)}); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := WriteIntervalLog(&b, "ttr", iv, DistTTR, time.Unix(1_800_000_000, 0), 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, `"`) {
			got = append(got, strings.Join(strings.Split(line, ",")[:3], ","))
		}
	}
	want := []string{"0.000000,1.000000,0.001000", "1.000000,1.000000,0.000000", "2.000000,0.500000,0.000000", "3.000000,1.000000,0.001000"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("intervals %q, want %q", got, want)
	}
	if !strings.Contains(b.String(), "#stampede ttr latency in microseconds; interval max in seconds; one interval per 1s\n") {
		t.Errorf("header:\n%s", b.String())
	}
}

// TestReadHistogramLogRefusesOtherConfig: a log holding a histogram of
// another range or precision is refused, not merged approximately.
func TestReadHistogramLogRefusesOtherConfig(t *testing.T) {
	other := hdrhistogram.New(1, 1000, 2)
	_ = other.RecordValue(5)
	var buf bytes.Buffer
	if err := WriteHistogramLog(&buf, "x", other, time.Unix(0, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHistogramLog(&buf); !errors.Is(err, ErrHistogramConfig) {
		t.Fatalf("a log of another configuration: %v, want ErrHistogramConfig", err)
	}
}
