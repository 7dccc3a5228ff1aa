package storm

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
)

// WriteResults writes the results folder of a run: summary.json,
// timeline.csv, the HdrHistogram logs (connect, ttr, message_rtt, resume
// .hlog), resources.csv and kernel.csv when their samplers are given,
// haproxy.csv when the run read a load balancer's counters, and
// report.html rendered from those files alone (as `stampede report DIR`
// renders it again). start is the run's start, the time axis of the CSVs.
func WriteResults(dir string, res *Result, sampler *hoststat.Sampler, kernel *hoststat.KernelSampler, start time.Time) error {
	return writeResults(dir, res, sampler, kernel, start, nil, false)
}

// writeResults is WriteResults with the run's sidecars, whose files are
// written before report.html, and private: the folder 0700 from the start
// (nobody else can open what is written into it meanwhile) and every file
// in it 0600 at the end.
func writeResults(dir string, res *Result, sampler *hoststat.Sampler, kernel *hoststat.KernelSampler, start time.Time, side []Sidecar, private bool) (err error) {
	mode := os.FileMode(0o755)
	if private {
		mode = 0o700
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if private {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer func() {
			if perr := privateFiles(dir); err == nil {
				err = perr
			}
		}()
	}
	if err := res.Summary.WriteJSON(dir); err != nil {
		return err
	}
	write := func(name string, w func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = w(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	sum := res.Summary
	if err := write(results.TimelineFile, func(w io.Writer) error {
		return results.WriteTimelineCSV(w, results.TimelineRows(res.Report.Timeline, sum.Events, sum.DurationS))
	}); err != nil {
		return err
	}
	length := time.Duration(sum.DurationS * float64(time.Second))
	if err := results.WriteHistogramLogs(dir, res.Report, length); err != nil {
		return err
	}
	// Each agent's own histograms beside the merged ones: the merged
	// files are exactly their merge (docs/fleet.md).
	for name, r := range res.Members {
		sub := filepath.Join(dir, AgentsDir, safeName(name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := results.WriteHistogramLogs(sub, r, length); err != nil {
			return err
		}
	}
	if sampler != nil {
		if err := write(results.ResourcesFile, func(w io.Writer) error {
			return hoststat.WriteResourcesCSV(w, start, sampler.Samples())
		}); err != nil {
			return err
		}
	}
	if kernel != nil {
		if err := write(results.KernelFile, func(w io.Writer) error { return kernel.WriteCSV(w, start) }); err != nil {
			return err
		}
	}
	if res.HAProxy != nil {
		if err := write(results.HAProxyFile, func(w io.Writer) error { return res.HAProxy.WriteCSV(w, start) }); err != nil {
			return err
		}
	}
	for _, sc := range side {
		if err := sc.WriteFiles(dir); err != nil {
			return err
		}
	}
	return report.Render(dir)
}

// AgentsDir is the folder of a results folder that holds each agent's own
// histogram logs, one folder per agent name.
const AgentsDir = "agents"

// safeName is name as one path element.
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '/' || c == 0 || c == '\\' {
			b[i] = '_'
		}
	}
	if s := string(b); s != "" && s != "." && s != ".." {
		return s
	}
	return "_"
}

// privateFiles makes every file of dir (and of its subfolders) 0600 and
// every subfolder 0700.
func privateFiles(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o700)
		}
		if d.Type().IsRegular() {
			return os.Chmod(path, 0o600)
		}
		return nil
	})
}
