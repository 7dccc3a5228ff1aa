package results

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The HdrHistogram interval logs of a results folder, one per distribution.
const (
	ConnectLogFile = "connect.hlog"
	TTRLogFile     = "ttr.hlog"
	RTTLogFile     = "message_rtt.hlog"
	ResumeLogFile  = "resume.hlog"
	// RTTScheduledLogFile holds the round trips measured from the scheduled
	// send time (Report.RTTScheduled).
	RTTScheduledLogFile = "message_rtt_scheduled.hlog"
)

// HistogramLog names one histogram of a Report and its log file.
type HistogramLog struct {
	// File is the log's name in the results folder.
	File string
	// Name is the distribution's short name, as in summary.json
	// latency_ms ("connect", "ttr", "message_rtt", "resume",
	// "message_rtt_scheduled").
	Name string
	// Histogram is the distribution in microseconds; nil writes an empty
	// one.
	Histogram *hdrhistogram.Histogram
}

// HistogramLogs lists the report's histograms with their files, in
// summary.json latency_ms order.
func HistogramLogs(r *Report) []HistogramLog {
	return []HistogramLog{
		{ConnectLogFile, "connect", r.Connect},
		{TTRLogFile, "ttr", r.TTR},
		{RTTLogFile, "message_rtt", r.RTT},
		{ResumeLogFile, "resume", r.Resume},
		{RTTScheduledLogFile, "message_rtt_scheduled", r.RTTScheduled},
	}
}

// WriteHistogramLog writes h as an HdrHistogram interval log (format 1.3,
// as hdrhistogram-go's HistogramLogWriter and the Java HistogramLogReader
// and HistogramLogProcessor read it): a StartTime and BaseTime header
// with the run's start, then one interval from 0 to length with h in it.
//
// One interval covers the run: loadgen records each distribution for the
// whole run, so there is no finer interval to write. Values are
// microseconds; the interval line's max column is in seconds (the writer
// divides by 1e6). HistogramLogProcessor prints milliseconds with
// -outputValueUnitRatio 1000. Intervals carry no tag, so tools that read
// only untagged intervals by default read them.
func WriteHistogramLog(w io.Writer, name string, h *hdrhistogram.Histogram, start time.Time, length time.Duration) error {
	if h == nil {
		h = NewHistogram()
	}
	// A copy: the interval's times are set on it, not on the report's.
	c := hdrhistogram.Import(h.Export())
	startMs := start.UnixMilli()
	c.SetStartTimeMs(startMs)
	c.SetEndTimeMs(startMs + length.Milliseconds())
	c.SetTag("")
	bw := bufio.NewWriter(w)
	lw := hdrhistogram.NewHistogramLogWriter(bw)
	lw.SetBaseTime(startMs)
	secs := fmt.Sprintf("%d.%03d", startMs/1000, startMs%1000)
	err := lw.OutputLogFormatVersion()
	if err == nil {
		err = lw.OutputComment(fmt.Sprintf("stampede %s latency in microseconds; interval max in seconds", name))
	}
	if err == nil {
		// Written here rather than with OutputStartTime, which drops the
		// milliseconds the relative timestamps are taken from.
		_, err = fmt.Fprintf(bw, "#[StartTime: %s (seconds since epoch), %s]\n#[BaseTime: %s (seconds since epoch)]\n",
			secs, start.UTC().Format("2006-01-02T15:04:05.000Z"), secs)
	}
	if err == nil {
		err = lw.OutputLegend()
	}
	if err == nil {
		err = lw.OutputIntervalHistogram(c)
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// ReadHistogramLog reads an interval log with hdrhistogram-go's reader and
// returns every interval merged into one histogram.
func ReadHistogramLog(r io.Reader) (*hdrhistogram.Histogram, error) {
	lr := hdrhistogram.NewHistogramLogReader(r)
	sum := NewHistogram()
	for n := 0; ; n++ {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return nil, fmt.Errorf("results: histogram log interval %d: %w", n+1, err)
		}
		if h == nil {
			return sum, nil
		}
		if dropped := sum.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("results: histogram log interval %d: %d values outside the range", n+1, dropped)
		}
	}
}

// WriteHistogramLogs writes the report's interval logs into dir.
func WriteHistogramLogs(dir string, r *Report, length time.Duration) error {
	for _, l := range HistogramLogs(r) {
		if err := writeFile(filepath.Join(dir, l.File), func(w io.Writer) error {
			return WriteHistogramLog(w, l.Name, l.Histogram, r.Start, length)
		}); err != nil {
			return err
		}
	}
	return nil
}

// ReadHistogramLogFile reads one interval log file.
func ReadHistogramLogFile(path string) (*hdrhistogram.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := ReadHistogramLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// writeFile creates path and writes it with write, reporting the first
// error, the close's included.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return nil
}
