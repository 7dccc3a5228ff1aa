package results

import (
	"bufio"
	"fmt"
	"io"
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
	// Dist is the distribution.
	Dist Dist
	// Histogram is the distribution in microseconds; nil writes an empty
	// one.
	Histogram *hdrhistogram.Histogram
}

// HistogramLogs lists the report's histograms with their files, in
// summary.json latency_ms order.
func HistogramLogs(r *Report) []HistogramLog {
	files := [NumDists]string{ConnectLogFile, TTRLogFile, RTTLogFile, ResumeLogFile, RTTScheduledLogFile}
	l := make([]HistogramLog, NumDists)
	for d := range NumDists {
		l[d] = HistogramLog{File: files[d], Name: d.String(), Dist: d, Histogram: *r.Hist(d)}
	}
	return l
}

// WriteHistogramLog writes h as an HdrHistogram interval log (format 1.3,
// as hdrhistogram-go's HistogramLogWriter and the Java HistogramLogReader
// and HistogramLogProcessor read it): a StartTime and BaseTime header
// with the run's start, then one interval from 0 to length with h in it.
// It is what a report without per-interval histograms (Report.Intervals)
// is written with; WriteIntervalLog writes those that have them.
//
// Values are microseconds; the interval line's max column is in seconds
// (the writer divides by 1e6). HistogramLogProcessor prints milliseconds
// with -outputValueUnitRatio 1000. Intervals carry no tag, so tools that
// read only untagged intervals by default read them.
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
	return writeLog(w, name, "", start, func(lw *hdrhistogram.HistogramLogWriter) error {
		return lw.OutputIntervalHistogram(c)
	})
}

// WriteIntervalLog writes distribution d of iv as an interval log like
// WriteHistogramLog's, with one interval line per interval of iv.Length
// from the run's start: interval i from i*Length to (i+1)*Length, the last
// one before length cut at length, every interval up to the run's length
// or the last that holds values written, empty or not, so the log's time
// axis has no gaps. Merged, the intervals are the distribution's total.
func WriteIntervalLog(w io.Writer, name string, iv *Intervals, d Dist, start time.Time, length time.Duration) error {
	n := iv.End()
	if length > 0 {
		n = max(n, int((length+iv.Length-1)/iv.Length))
	}
	startMs := start.UnixMilli()
	note := fmt.Sprintf("; one interval per %s", iv.Length)
	return writeLog(w, name, note, start, func(lw *hdrhistogram.HistogramLogWriter) error {
		for i := range n {
			h, err := iv.Packed(d, i)
			if err != nil {
				return err
			}
			if h == nil {
				h = newPacked()
			}
			from, to := time.Duration(i)*iv.Length, time.Duration(i+1)*iv.Length
			if from < length {
				to = min(to, length)
			}
			h.SetStartTimeMs(startMs + from.Milliseconds())
			h.SetEndTimeMs(startMs + to.Milliseconds())
			if err := lw.OutputIntervalPackedHistogram(h); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLog writes a log's header, then its intervals with body.
func writeLog(w io.Writer, name, note string, start time.Time, body func(*hdrhistogram.HistogramLogWriter) error) error {
	startMs := start.UnixMilli()
	bw := bufio.NewWriter(w)
	lw := hdrhistogram.NewHistogramLogWriter(bw)
	lw.SetBaseTime(startMs)
	secs := fmt.Sprintf("%d.%03d", startMs/1000, startMs%1000)
	err := lw.OutputLogFormatVersion()
	if err == nil {
		err = lw.OutputComment(fmt.Sprintf("stampede %s latency in microseconds; interval max in seconds%s", name, note))
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
		err = body(lw)
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
		// One configuration fleet-wide: a histogram of another is refused,
		// never merged approximately.
		if err := checkConfig(h.LowestTrackableValue(), h.HighestTrackableValue(), int64(h.SignificantFigures())); err != nil {
			return nil, fmt.Errorf("results: histogram log interval %d: %w", n+1, err)
		}
		if dropped := sum.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("results: histogram log interval %d: %d values outside the range", n+1, dropped)
		}
	}
}

// intervalsComplete says whether the report has per-interval histograms
// and those of d hold exactly its total, merged.
func intervalsComplete(r *Report, d Dist) (bool, error) {
	if r.Intervals == nil || r.Intervals.Len() == 0 {
		return false, nil
	}
	sum, err := r.Intervals.Total(d)
	if err != nil {
		return false, err
	}
	h := *r.Hist(d)
	if h == nil {
		return sum.TotalCount() == 0, nil
	}
	return sum.Equals(h), nil
}

// Write writes l's log of r, the run being length long, to w: one interval
// per Report.Intervals.Length where the report has per-interval histograms
// that add up to its total (WriteIntervalLog), one interval for the run
// otherwise (a report of an older stampede: WriteHistogramLog).
func (l HistogramLog) Write(w io.Writer, r *Report, length time.Duration) error {
	if ok, err := intervalsComplete(r, l.Dist); err != nil {
		return err
	} else if ok {
		return WriteIntervalLog(w, l.Name, r.Intervals, l.Dist, r.Start, length)
	}
	return WriteHistogramLog(w, l.Name, l.Histogram, r.Start, length)
}
