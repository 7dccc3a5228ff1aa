package main

import (
	"bytes"
	"strings"
	"testing"
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
