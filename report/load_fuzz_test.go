package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
)

// TestReadTableDuplicateColumn: a header naming a column twice is an
// error; it used to give the column two values per row, and the table
// twice the rows the file has (found by FuzzReadTable).
func TestReadTableDuplicateColumn(t *testing.T) {
	_, err := ReadTable(strings.NewReader("t_s,cpu,cpu\n0,1,2\n"))
	if err == nil || !strings.Contains(err.Error(), `"cpu"`) {
		t.Fatalf("ReadTable: %v, want an error naming column cpu", err)
	}
}

// FuzzReadTable: no CSV makes ReadTable panic, and a table it returns is
// rectangular: every column has one number and one cell per record.
func FuzzReadTable(f *testing.F) {
	for _, s := range []string{
		"t_s,cpu\n0,1.5\n1,\n", "a,b\n1\n1,2,3\n", "a,a\n1,2\n", "\n", "", "a\n\"x", "a,b\r\n\"1,2\",NaN\n",
		"t_s,role\n0.1,loadgen\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := ReadTable(bytes.NewReader(in))
		if err != nil {
			return
		}
		cr := csv.NewReader(bytes.NewReader(in))
		cr.FieldsPerRecord = -1
		recs, _ := cr.ReadAll()
		n := len(recs) - 1
		if tab.Rows() != n {
			t.Fatalf("%q: %d rows, the file has %d records after its header", in, tab.Rows(), n)
		}
		for _, c := range tab.Columns {
			if len(tab.Num[c]) != n || len(tab.Text[c]) != n {
				t.Fatalf("%q: column %q has %d numbers and %d cells, table %d rows", in, c, len(tab.Num[c]), len(tab.Text[c]), n)
			}
		}
	})
}

// FuzzLoad: no summary.json, timeline.csv or latency log makes Load panic;
// it either fails or returns the run with its summary.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"schema":1,"clients":10}`), []byte("t_s,connected\n0,1\n"), []byte{})
	f.Add([]byte(`{}`), []byte{}, []byte("#[StartTime: 0]\n0.000,1.000,1.0,HISTFAAAAB54nJNpmSzMwMDAxQABzFCaEUwzAQAMJgC1\n"))
	f.Add([]byte(`null`), []byte("t_s\n"), []byte("garbage"))
	f.Add([]byte(`{"recovery":[{"r100_s":null}]}`), []byte("\"\n"), []byte("0,0,0,HISTF"))
	f.Fuzz(func(t *testing.T, summary, timeline, hlog []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{
			folder.SummaryFile: summary, folder.TimelineFile: timeline, results.ConnectLogFile: hlog,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run, err := Load(dir)
		if err != nil {
			return
		}
		if run.Summary == nil {
			t.Fatalf("Load of %q succeeded without a summary", summary)
		}
	})
}
