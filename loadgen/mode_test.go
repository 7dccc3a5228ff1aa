package loadgen

import (
	"math"
	"testing"

	"github.com/stampede-dev/stampede/spec"
)

func TestStamp(t *testing.T) {
	for _, tc := range []struct {
		name           string
		seq            uint32
		sent, due      int64
		wantDue        int64
		wantPadAtLeast int
	}{
		{name: "zero", seq: 0, sent: 0, due: 0, wantDue: 0},
		{name: "on time", seq: 17, sent: 1_500_000_000, due: 1_500_000_000, wantDue: 1_500_000_000},
		{name: "late by 40ms", seq: 18, sent: 1_540_000_000, due: 1_500_000_000, wantDue: 1_500_000_000},
		// A due after the send (a clock oddity) counts as on time.
		{name: "early", seq: 19, sent: 1_000, due: 2_000, wantDue: 1_000},
		// A lag beyond 2^42-1 ns (73 min) saturates.
		{name: "lag saturates", seq: 20, sent: 1 << 50, due: 0, wantDue: 1<<50 - maxLag},
		{name: "largest", seq: math.MaxUint32, sent: math.MaxInt64, due: math.MaxInt64 - 1, wantDue: math.MaxInt64 - 1},
		{name: "before the start", seq: 3, sent: -5_000_000, due: -6_000_000, wantDue: -6_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, 40)
			putStamp(p, tc.seq, tc.sent, tc.due)
			seq, sent, due, ok := readStamp(p)
			if !ok || seq != tc.seq || sent != tc.sent || due != tc.wantDue {
				t.Errorf("read %d %d %d %v from %q, want due %d", seq, sent, due, ok, p, tc.wantDue)
			}
			if p[len(p)-1] != '.' {
				t.Errorf("padding missing: %q", p)
			}
		})
	}
	// The stamp fills the smallest payload exactly.
	p := make([]byte, spec.MinMsgSize)
	putStamp(p, 1, 2, 1)
	if _, _, _, ok := readStamp(p); !ok || spec.MinMsgSize != 26 {
		t.Errorf("stamp of %d bytes in %d: %q", stampSize, spec.MinMsgSize, p)
	}
	for _, bad := range []string{"", "s00000t0000000000000000000", "x000001t000000000010000000", "s00000*t0000000000100000000", "s000001x0000000000100000000",
		"sZZZZZZt000000000010000000"} {
		if _, _, _, ok := readStamp([]byte(bad)); ok {
			t.Errorf("readStamp(%q) accepted", bad)
		}
	}
}
