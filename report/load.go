package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

// Run is one results folder, loaded: everything report.html shows of it.
type Run struct {
	// Dir is the folder it was loaded from.
	Dir string
	// Name is the folder's name, with as many parent folders as it takes
	// to tell it from the other runs loaded with it (LoadDirs).
	Name string
	// Policy is the run's backoff policy as written on the command line;
	// empty when its config has none.
	Policy string
	// Label names the run in a comparison: its Name and its Policy, so
	// two runs of one policy are told apart.
	Label string
	// Summary is summary.json.
	Summary *summary.Summary
	// Timeline is timeline.csv; empty when the folder has none.
	Timeline []folder.TimelineRow
	// Latency holds the distributions of the *.hlog files by name
	// ("connect", "ttr", "message_rtt", "resume"), in microseconds; a
	// missing file is a missing entry.
	Latency map[string]*hdrhistogram.Histogram
	// Resources is resources.csv; nil when absent.
	Resources *Table
	// Kernel is kernel.csv; nil when absent.
	Kernel *Table
	// HTTP is an HTTP fleet's http_timeline.csv (its summary has an
	// "http" object); nil for a WebSocket run or when absent. Its
	// latency logs are in Latency as "http" and "http_attempt".
	HTTP *results.HTTPTimeline
	// Missing lists the folder's files that were not there, for the
	// report to say so rather than show an empty plot without reason.
	Missing []string
}

// Table is a CSV file read by column name: numeric columns as float64
// (NaN where a cell is empty or not a number), text columns as strings.
type Table struct {
	// Columns are the header's names, in file order.
	Columns []string
	// Num holds each column's numbers, one per row.
	Num map[string][]float64
	// Text holds each column's cells as written, one per row.
	Text map[string][]string
}

// Rows returns the table's number of rows.
func (t *Table) Rows() int {
	if t == nil || len(t.Columns) == 0 {
		return 0
	}
	return len(t.Text[t.Columns[0]])
}

// ReadTable reads a CSV file with a header line. A column name given twice
// is an error: the table is read by name.
func ReadTable(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(header))
	for _, h := range header {
		if seen[h] {
			return nil, fmt.Errorf("column %q appears twice in the header", h)
		}
		seen[h] = true
	}
	t := &Table{Columns: header, Num: map[string][]float64{}, Text: map[string][]string{}}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		for i, h := range header {
			cell := ""
			if i < len(rec) {
				cell = rec[i]
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				v = nan
			}
			t.Num[h] = append(t.Num[h], v)
			t.Text[h] = append(t.Text[h], cell)
		}
	}
}

// Load reads a results folder. summary.json is required; every other file
// is optional and listed in Missing when absent. A file that is there but
// does not parse is an error.
func Load(dir string) (*Run, error) {
	sum, err := folder.ReadSummary(filepath.Join(dir, folder.SummaryFile))
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Summary: sum, Policy: policyOf(sum), Latency: map[string]*hdrhistogram.Histogram{}}
	run.setName(filepath.Base(filepath.Clean(dir)))
	open := func(name string, read func(io.Reader) error) error {
		f, err := folder.Open(dir, name)
		if errors.Is(err, fs.ErrNotExist) {
			run.Missing = append(run.Missing, name)
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		if err := read(f); err != nil {
			return fmt.Errorf("report: %s: %w", filepath.Join(dir, name), err)
		}
		return nil
	}
	if sum.HTTP != nil {
		return run, loadHTTP(run, open)
	}
	if err := open(folder.TimelineFile, func(r io.Reader) (err error) {
		run.Timeline, err = folder.ReadTimelineCSV(r)
		return err
	}); err != nil {
		return nil, err
	}
	for _, l := range results.HistogramLogs(&results.Report{}) {
		if err := open(l.File, func(r io.Reader) error {
			h, err := results.ReadHistogramLog(r)
			run.Latency[l.Name] = h
			return err
		}); err != nil {
			return nil, err
		}
	}
	if sum.Simulated {
		// The simulator samples no process and reads no kernel: its
		// folder never has these files, so nothing is missing.
		return run, nil
	}
	if err := open(results.ResourcesFile, func(r io.Reader) (err error) {
		run.Resources, err = ReadTable(r)
		return err
	}); err != nil {
		return nil, err
	}
	if err := open(results.KernelFile, func(r io.Reader) (err error) {
		run.Kernel, err = ReadTable(r)
		return err
	}); err != nil {
		return nil, err
	}
	return run, nil
}

// BenchFile is the index `stampede bench` writes into its folder: the runs
// it made, one folder each.
const BenchFile = "bench.json"

// LoadDirs loads every folder. A bench folder (one with bench.json and no
// summary.json) stands for its runs, in bench order.
func LoadDirs(dirs []string) ([]*Run, error) {
	var runs []*Run
	for _, d := range dirs {
		subs, err := benchDirs(d)
		if err != nil {
			return nil, err
		}
		if subs == nil {
			subs = []string{d}
		}
		for _, s := range subs {
			r, err := Load(s)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
		}
	}
	uniqueNames(runs)
	return runs, nil
}

// uniqueNames names each run by the shortest tail of its folder's path
// that no other run shares: a/run and b/run are a/run and b/run, where
// run alone would do for one of them.
func uniqueNames(runs []*Run) {
	parts := make([][]string, len(runs))
	for i, r := range runs {
		abs, err := filepath.Abs(r.Dir)
		if err != nil {
			abs = filepath.Clean(r.Dir)
		}
		parts[i] = strings.Split(filepath.ToSlash(abs), "/")
	}
	tail := func(i, n int) string {
		p := parts[i]
		return filepath.Join(p[max(0, len(p)-n):]...)
	}
	for i, r := range runs {
		n := 1
	grow:
		for n < len(parts[i]) {
			for j := range runs {
				if j != i && filepath.Clean(runs[j].Dir) != filepath.Clean(r.Dir) && tail(j, n) == tail(i, n) {
					n++
					continue grow
				}
			}
			break
		}
		r.setName(tail(i, n))
	}
}

// setName sets the run's Name and the Label made of it and its Policy.
func (r *Run) setName(name string) {
	r.Name, r.Label = name, name
	if r.Policy != "" {
		r.Label = name + " (" + r.Policy + ")"
	}
	if r.Summary != nil && r.Summary.Simulated {
		r.Label += " [simulated]"
	}
}

// benchDirs returns the run folders of a bench folder, nil when dir is not
// one.
func benchDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, folder.SummaryFile)); err == nil {
		return nil, nil
	}
	b, err := folder.ReadFile(dir, BenchFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var idx struct {
		Runs []struct {
			Dir string `json:"dir"`
			Err string `json:"error"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("report: %s: %w", filepath.Join(dir, BenchFile), err)
	}
	var out []string
	for _, r := range idx.Runs {
		if r.Dir == "" {
			continue
		}
		p := r.Dir
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(filepath.Join(p, folder.SummaryFile)); err != nil {
			continue // a run that failed before writing anything
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("report: %s lists no run with a %s", filepath.Join(dir, BenchFile), folder.SummaryFile)
	}
	return out, nil
}

// policyOf returns a run's policy as written on the command line, from
// its spec; empty when it has none (an HTTP fleet, a folder written
// before the spec was recorded).
func policyOf(s *summary.Summary) string {
	if s.Spec == nil || s.Spec.Client == nil {
		return ""
	}
	return s.Spec.Client.Policy.String()
}
