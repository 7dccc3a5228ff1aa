package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileCaps: a config file too big or nested too deep is refused
// in one line before it is parsed (4,000 nested TOML tables took 1.8 s
// and 725 MB to parse), and so is a header too long for any server.
func TestConfigFileCaps(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"deep.toml":   "clients = " + strings.Repeat("{a=", 4000) + "1" + strings.Repeat("}", 4000) + "\n",
		"dotted.toml": "[" + strings.Repeat("a.", 4000) + "a]\n",
		"flow.yaml":   "clients: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n",
		"block.yaml": func() string {
			var b strings.Builder
			for i := range 100 {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}(),
		"big.yaml":    "clients: 10\n# " + strings.Repeat("x", 2<<20) + "\n",
		"header.yaml": "url: ws://127.0.0.1:1/\nclients: 1\nheader: [\"X-Big: " + strings.Repeat("v", 200<<10) + "\"]\n",
	}
	for file, text := range files {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ file, want string }{
		{"deep.toml", "deep.toml:1:1: nested deeper than 16 levels"},
		{"dotted.toml", "dotted.toml:1:1: nested deeper than 16 levels"},
		{"flow.yaml", "flow.yaml:1:1: nested deeper than 16 levels"},
		{"block.yaml", "block.yaml:17:1: nested deeper than 16 levels"},
		{"big.yaml", "larger than 1048576 bytes"},
		{"header.yaml", "header: invalid value \"X-Big: vvv"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			code, out, _ := runIn(t, "loadgen", "--config", filepath.Join(dir, tc.file))
			if code != 2 || !strings.Contains(out, tc.want) || strings.Count(out, "\n") != 1 || len(out) > 1000 {
				t.Errorf("exit %d, %q; want 2 and one short line with %q", code, out[:min(len(out), 300)], tc.want)
			}
		})
	}
}

// TestIntervalFloors: an interval below its floor is refused in one line
// naming its flag (1ns sent 3,562 OTLP exports, or 1.14 million progress
// lines, in 3 s).
func TestIntervalFloors(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--otlp-interval", "--otlp-interval: must be 0 (the default) or at least 100ms, got 1ns"},
		{"--progress-interval", "--progress-interval: must be 0 (no progress) or at least 100ms, got 1ns"},
		{"--ping-interval", "--ping-interval: must be 0 (the default), negative (off) or at least 10ms, got 1ns"},
	} {
		args := []string{"loadgen", "--url", "ws://127.0.0.1:1/", "--clients", "1", "--duration", "1s", tc.flag, "1ns"}
		if tc.flag == "--otlp-interval" {
			args = append(args, "--otlp-endpoint", "http://127.0.0.1:1")
		}
		code, out, _ := runIn(t, args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%s 1ns: exit %d, %q; want 2 and %q", tc.flag, code, out, tc.want)
		}
	}
}
