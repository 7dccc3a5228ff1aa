package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/storm"
)

// TestArgsOneVoice: an error names its flag once, not the flag and then
// the library's package; counts print as name=count, never a Go map.
func TestArgsOneVoice(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--chaos: chaos: line 1, col 27: x", "--chaos: line 1, col 27: x"},
		{"--chaos-file f.txt: chaos: line 2: x", "--chaos-file f.txt: line 2: x"},
		{`--policy: policy "exp:jitter=2": jitter: bad`, `--policy: policy "exp:jitter=2": jitter: bad`},
		{"--store: redis: dial refused", "--store: redis: dial refused"},
		{"run: unexpected argument", "run: unexpected argument"},
	} {
		if got := oneVoice(tc.in); got != tc.want {
			t.Errorf("oneVoice(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	code := runApp([]string{"stampede", "run", "--chaos", "at 5s restart abrupt down=2x"}, &stdout, &stderr)
	if want := "stampede: --chaos: line 1, col 27: "; code != 2 || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q, want exit 2 and %q...", code, stderr.String(), want)
	}
	if got := countsText(map[string]uint64{"529": 5345, "200": 853}); got != "200=853 529=5345" {
		t.Errorf("countsText = %q", got)
	}
	if got := countsText(nil); got != "none" {
		t.Errorf("countsText(nil) = %q", got)
	}
}

// TestBenchTableFirstLine: the bench's table is the first thing on its
// standard output: its header, not a blank line.
func TestBenchTableFirstLine(t *testing.T) {
	var b bytes.Buffer
	c := cli.NewContext(&cli.App{Writer: &b}, nil, nil)
	runs := []storm.BenchRun{{Policy: "fixed:initial=1s"}, {Policy: "exp:initial=1s"}}
	if err := writeBenchTable(c, runs, "out"); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(first, "policy") {
		t.Errorf("first line %q; want the table's header\n%s", first, b.String())
	}
}

// TestErrorsNameTheirFlag: a library's error reaches the terminal after
// the flag or command it concerns, without the library's own prefix.
func TestErrorsNameTheirFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"target", "--store", "bogus://x"}, `stampede: --store: unknown scheme "bogus"`},
		{[]string{"report", filepath.Join(dir, "none")}, "stampede: report: open " + filepath.Join(dir, "none", "summary.json") + ": "},
	} {
		var stdout, stderr bytes.Buffer
		code := runApp(append([]string{"stampede"}, tc.args...), &stdout, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line %q...", tc.args, code, stderr.String(), tc.want)
		}
	}
}
