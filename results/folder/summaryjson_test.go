package folder

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stampede-dev/stampede/internal/resultstest"
	"github.com/stampede-dev/stampede/results/summary"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestSummarizeGolden(t *testing.T) {
	s := summary.Summarize(resultstest.SummaryInput())
	dir := t.TempDir()
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("summary.json differs from %s (go test -run Golden -update to accept):\n%s", golden, got)
	}
	if bytes.Contains(got, []byte("hunter2")) {
		t.Errorf("summary.json holds a secret of its spec:\n%s", got)
	}

	back, err := ReadSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("ReadSummary(WriteJSON(s)) != s:\n%+v\n%+v", back, s)
	}
}

func TestReadSummaryErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"run_id": 3}`), 0o644)
	for _, p := range []string{filepath.Join(dir, "missing.json"), bad} {
		if _, err := ReadSummary(p); err == nil {
			t.Errorf("ReadSummary(%s) succeeded", p)
		}
	}
}
