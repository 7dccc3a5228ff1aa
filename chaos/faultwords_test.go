package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/fault"
)

func TestParseProxyFault(t *testing.T) {
	cases := []struct {
		words string
		want  fault.Set
		err   string // a substring of the error; "" for none
	}{
		{"", fault.Set{}, ""},
		{"off", fault.Set{}, ""},
		{"latency=200ms", fault.Set{Latency: 200 * time.Millisecond}, ""},
		{"  latency=200ms jitter=20ms ", fault.Set{Latency: 200 * time.Millisecond, Jitter: 20 * time.Millisecond}, ""},
		{"bandwidth=100kbit/s loss=1.5%", fault.Set{Bandwidth: 12500, Loss: 0.015}, ""},
		{"reset", fault.Set{Reset: true}, ""},
		{"blackhole", fault.Set{Blackhole: true}, ""},
		{"latency=5x", fault.Set{}, `proxy fault "latency=5x", col 9: expected a duration after "latency=", found "5x"`},
		{"reset latency=1s", fault.Set{}, `"reset" cannot be combined`},
		{"jitter=1s", fault.Set{}, `expected "latency=" too`},
		{"latency=1s; at 1s restart", fault.Set{}, "found a separator"},
		{"wobble", fault.Set{}, `unknown proxy fault "wobble"`},
	}
	for _, c := range cases {
		got, err := ParseProxyFault(c.words)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.words, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.words, err, c.err)
		case got != c.want:
			t.Errorf("%q: got %+v, want %+v", c.words, got, c.want)
		}
	}
}
