package results

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

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
