package connerr

import (
	"testing"
	"time"
)

func TestCloseHint(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 3250 * time.Millisecond, 7 * time.Second, 2 * time.Minute} {
		r := CloseHintReason(d)
		if len(r) > 123 {
			t.Errorf("%v: reason %q is longer than a close frame allows", d, r)
		}
		if got, ok := ParseCloseHint(r, 0); !ok || got != d {
			t.Errorf("ParseCloseHint(%q) = %v, %v; want %v", r, got, ok, d)
		}
	}
	for _, r := range []string{"", "going away", "retry after", "retry after soon", "retry after -1s", "retry after 0s"} {
		if d, ok := ParseCloseHint(r, 0); ok {
			t.Errorf("ParseCloseHint(%q) = %v, true; want not a hint", r, d)
		}
	}
	if d, _ := ParseCloseHint("retry after 10m", time.Minute); d != time.Minute {
		t.Errorf("the cap: got %v, want 1m", d)
	}
	if d := CloseHint(Closed1013, CloseHintReason(3*time.Second), 0); d != 3*time.Second {
		t.Errorf("CloseHint of a 1013 = %v, want 3s", d)
	}
	if d := CloseHint(Closed1001, CloseHintReason(3*time.Second), 0); d != 0 {
		t.Errorf("CloseHint of a 1001 = %v, want none", d)
	}
	for _, tc := range []struct {
		c      Class
		status int
		want   bool
	}{{Closed1013, 0, true}, {Closed1012, 0, true}, {Closed1001, 0, false}, {Handshake5xx, 503, true}, {Handshake4xx, 404, false}} {
		if got := HonorsHint(tc.c, tc.status); got != tc.want {
			t.Errorf("HonorsHint(%v, %d) = %v, want %v", tc.c, tc.status, got, tc.want)
		}
	}
}
