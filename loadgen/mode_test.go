package loadgen

import (
	"math"
	"testing"
)

func TestStamp(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  uint32
		sent int64
	}{
		{"zero", 0, 0},
		{"typical", 17, 1_500_000_000},
		{"largest", math.MaxUint32, math.MaxInt64},
		{"before the start", 3, -5_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, 40)
			putStamp(p, tc.seq, tc.sent)
			seq, sent, ok := readStamp(p)
			if !ok || seq != tc.seq || sent != tc.sent {
				t.Errorf("read %d %d %v from %q", seq, sent, ok, p)
			}
			if p[len(p)-1] != '.' {
				t.Errorf("padding missing: %q", p)
			}
		})
	}
	for _, bad := range []string{"", "s0000000at000000000000000", "x00000001t0000000000000001", "s0000000Gt0000000000000001"} {
		if _, _, ok := readStamp([]byte(bad)); ok {
			t.Errorf("readStamp(%q) accepted", bad)
		}
	}
}
