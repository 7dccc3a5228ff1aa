package chaos

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/fault"
)

func TestScan(t *testing.T) {
	type word struct {
		text      string
		line, col int
	}
	tests := []struct {
		name string
		src  string
		want [][]word // words of each entry
		ends []word   // where each entry ends (text unused)
	}{
		{
			name: "separators",
			src:  "at 1s stall 1s;at 2s  stall\t2s\n",
			want: [][]word{
				{{"at", 1, 1}, {"1s", 1, 4}, {"stall", 1, 7}, {"1s", 1, 13}},
				{{"at", 1, 16}, {"2s", 1, 19}, {"stall", 1, 23}, {"2s", 1, 29}},
			},
			ends: []word{{"", 1, 15}, {"", 1, 31}},
		},
		{
			// A comment hides ";" and words to the end of its line; a
			// "#" ends a word; blank entries vanish.
			name: "comments",
			src:  "# at 0s stall 1s; x\n;;\n  at 9s#c;d\n",
			want: [][]word{{{"at", 3, 3}, {"9s", 3, 6}}},
			ends: []word{{"", 3, 8}},
		},
		{
			// Columns count characters: "é" is two bytes, one column.
			name: "unicode columns",
			src:  "é é",
			want: [][]word{{{"é", 1, 1}, {"é", 1, 3}}},
			ends: []word{{"", 1, 4}},
		},
		{name: "empty", src: "", want: nil, ends: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]word
			var ends []word
			for _, e := range scan(tt.src, MaxEntries) {
				var ws []word
				for _, w := range e.words {
					ws = append(ws, word{w.text, w.line, w.col})
					if tt.src[w.off:w.off+len(w.text)] != w.text {
						t.Errorf("word %q has offset %d", w.text, w.off)
					}
				}
				got = append(got, ws)
				ends = append(ends, word{"", e.end.line, e.end.col})
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(ends, tt.ends) {
				t.Errorf("scan(%q):\n got  %v ends %v\n want %v ends %v", tt.src, got, ends, tt.want, tt.ends)
			}
		})
	}
}

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: rejected
	}{
		{"1MB/s", 1_000_000},
		{"512KB/s", 512_000},
		{"512kB/s", 512_000},
		{"512KiB/s", 524_288},
		{"2GiB/s", 2 << 30},
		{"100kbit/s", 12_500},
		{"8Mbit/s", 1_000_000},
		{"1Gbit/s", 125_000_000},
		{"12bit/s", 2}, // 1.5 bytes, rounded to the nearest byte
		{"1.5MB/s", 1_500_000},
		{"1000GB/s", 1e12}, // the largest
		{"1001GB/s", 0},    // above 1000GB/s
		{"1bit/s", 0},      // below a byte
		{"0B/s", 0},        // nothing
		{"1MB", 0},         // no "/s"
		{"1mb/s", 0},       // ambiguous unit
		{"1kb/s", 0},       // kilobits or kilobytes?
		{"MB/s", 0},        // no number
		{"1e3B/s", 0},      // no exponents
		{"-1MB/s", 0},      // no sign
		{"1..5MB/s", 0},    // one point
	}
	for _, tt := range tests {
		got, msg := parseBandwidth(tt.in)
		if got != tt.want || (msg == "") != (tt.want != 0) {
			t.Errorf("parseBandwidth(%q) = %d, %q; want %d", tt.in, got, msg, tt.want)
		}
	}
}

func TestFormatBandwidth(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{1, "1B/s"},
		{999, "999B/s"},
		{1000, "1KB/s"},
		{1024, "1KiB/s"},
		{12_500, "12.5KB/s"},
		{1536, "1.536KB/s"},
		{1_500_000, "1500KB/s"},
		{1_000_000, "1MB/s"},
		{1_048_576, "1MiB/s"},
		{1_048_577, "1.048577MB/s"},
		{1e12, "1000GB/s"},
		{999_999_999_999, "999.999999999GB/s"},
	}
	for _, tt := range tests {
		got := strings.TrimPrefix(fault.Set{Bandwidth: tt.in}.String(), " bandwidth=")
		if got != tt.want {
			t.Errorf("Faults{Bandwidth: %d} writes %q, want %q", tt.in, got, tt.want)
		}
		if back, msg := parseBandwidth(got); back != tt.in {
			t.Errorf("parseBandwidth(%q) = %d %q, want %d", got, back, msg, tt.in)
		}
	}
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // 0: rejected
	}{
		{"1%", 0.01},
		{"100%", 1},
		{"0.5%", 0.005},
		{"0.000001%", 0.00000001},
		{"0.0000010%", 0.00000001}, // trailing zeros are not decimals
		{"0.0000001%", 0},          // a seventh decimal
		{"0%", 0},                  // a no-op, rejected
		{"100.5%", 0},
		{"1", 0},
		{"%", 0},
		{"1e1%", 0},
		{"NaN%", 0},
	}
	for _, tt := range tests {
		got, msg := parsePercent(tt.in)
		if got != tt.want || (msg == "") != (tt.want != 0) {
			t.Errorf("parsePercent(%q) = %v, %q; want %v", tt.in, got, msg, tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // -1: rejected
	}{
		{"100/s", 100},
		{"2.5/s", 2.5},
		{"0/s", 0},
		{"1000000000/s", 1e9},
		{"1000000001/s", -1},
		{"0.001/s", 0.001},
		// Below what a target paces (fault.MinAcceptRate): refused here,
		// not when the event fires.
		{"0.0001/s", -1},
		{"100", -1},
		{"100/m", -1},
		{"inf/s", -1},
		{"/s", -1},
	}
	for _, tt := range tests {
		got, msg := parseRate(tt.in)
		if tt.want < 0 {
			if msg == "" {
				t.Errorf("parseRate(%q) = %v, want rejected", tt.in, got)
			}
			continue
		}
		if got != tt.want || msg != "" {
			t.Errorf("parseRate(%q) = %v, %q; want %v", tt.in, got, msg, tt.want)
		}
	}
}
