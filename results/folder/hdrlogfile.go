package folder

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stampede-dev/stampede/results"
)

// WriteHistogramLogs writes the report's interval logs into dir, the run
// being length long: one interval per Report.Intervals.Length where the
// report has per-interval histograms that add up to its total
// (WriteIntervalLog), one interval for the run otherwise (a report of an
// older stampede: WriteHistogramLog).
func WriteHistogramLogs(dir string, r *results.Report, length time.Duration) error {
	for _, l := range results.HistogramLogs(r) {
		if err := WriteFile(filepath.Join(dir, l.File), func(w io.Writer) error {
			return l.Write(w, r, length)
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
	h, err := results.ReadHistogramLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
