package chaos_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/chaos"
)

// TestString checks the canonical form of each construct and that it parses
// back to the same timings and events.
func TestString(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"docs example",
			"at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 60s backlog 16; at 70s stall 5s; at 80s proxy latency=200ms loss=1% for 10s",
			"at 10s restart abrupt down=3s; every 30s restart graceful down=1s; at 1m0s backlog 16; at 1m10s stall 5s; at 1m20s proxy latency=200ms loss=1% for 10s"},
		{"rolling, proxy, stall and reject",
			"at 5s restart rolling interval=2s; at 20s proxy latency=200ms for 5s; at 30s stall 3s; at 40s reject 503 retry-after=2s for 3s",
			"at 5s restart abrupt rolling interval=2s; at 20s proxy latency=200ms for 5s; at 30s stall 3s; at 40s reject 503 retry-after=2s for 3s"},
		// Defaults are left out; the mode is always written.
		{"restart defaults", "at 0s restart procs=all shape=closed down=0s", "at 0s restart abrupt"},
		{"rolling default interval", "at 1s restart procs=rolling kill", "at 1s restart kill rolling interval=1s"},
		{"restart options in canonical order", "at 1s restart shape=stall down=1.5s procs=one graceful",
			"at 1s restart graceful procs=one down=1.5s shape=stall"},
		// from equal to every is the default and left out.
		{"every from default", "every 10s from 10s until 1m30s stall for 2s", "every 10s until 1m30s stall 2s"},
		{"every from 0", "every 10s from 0s stall 2s", "every 10s from 0s stall 2s"},
		{"accept-rate", "at 1s accept-rate 0; at 2s accept-rate 2.50/s for 1m", "at 1s accept-rate unlimited; at 2s accept-rate 2.5/s for 1m0s"},
		{"reject", "at 1s reject 429 for 10s", "at 1s reject 429 for 10s"},
		// Proxy faults in a fixed order; bandwidth in the largest exact unit.
		{"proxy faults", "at 1s proxy loss=0.50% bandwidth=100kbit/s jitter=50ms latency=100ms for 1m",
			"at 1s proxy latency=100ms jitter=50ms bandwidth=12.5KB/s loss=0.5% for 1m0s"},
		{"bandwidth units", "at 1s proxy bandwidth=8Mbit/s for 1s; at 2s proxy bandwidth=512KiB/s for 1s; at 3s proxy bandwidth=1536B/s for 1s; at 4s proxy bandwidth=999B/s for 1s; at 5s proxy bandwidth=1.000001GB/s for 1s",
			"at 1s proxy bandwidth=1MB/s for 1s; at 2s proxy bandwidth=512KiB/s for 1s; at 3s proxy bandwidth=1.536KB/s for 1s; at 4s proxy bandwidth=999B/s for 1s; at 5s proxy bandwidth=1000001KB/s for 1s"},
		{"tiny loss", "at 1s proxy loss=0.0000010% for 1s", "at 1s proxy loss=0.000001% for 1s"},
		{"whole loss", "at 1s proxy loss=100.0% for 1s", "at 1s proxy loss=100% for 1s"},
		{"empty", "# nothing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched, err := chaos.Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			got := sched.String()
			if got != tt.want {
				t.Errorf("String:\n got  %s\n want %s", got, tt.want)
			}
			again, err := chaos.Parse(got)
			if err != nil {
				t.Fatalf("Parse(String()) = %v", err)
			}
			if len(again.Entries) != len(sched.Entries) {
				t.Fatalf("round trip: %d entries, want %d", len(again.Entries), len(sched.Entries))
			}
			for i := range sched.Entries {
				if a, b := sched.Entries[i], again.Entries[i]; a.Timing != b.Timing || a.Event != b.Event {
					t.Errorf("round trip entry %d:\n got  %+v %+v\n want %+v %+v", i, b.Timing, b.Event, a.Timing, a.Event)
				}
			}
		})
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		kind chaos.Kind
		want string
	}{
		{chaos.Restart, "restart"}, {chaos.Stall, "stall"}, {chaos.Backlog, "backlog"},
		{chaos.AcceptRate, "accept-rate"}, {chaos.Reject, "reject"}, {chaos.ProxyEvent, "proxy"},
		{0, "Kind(0)"}, {99, "Kind(99)"},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(tt.kind), got, tt.want)
		}
	}
}

// A schedule with a restart that overlaps the previous one's down time
// parses, then fails Check.
func ExampleParse() {
	sched, err := chaos.Parse(`
# deploy rehearsal
at 10s restart abrupt down=3s shape=stall
every 30s until 2m restart graceful rolling interval=2s
at 70s proxy latency=200ms jitter=50ms loss=1% for 10s`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range sched.Plan(2 * time.Minute) {
		fmt.Printf("%5v  %-11s line %d: %s\n", p.At, p.Event.Kind, sched.Entries[p.Entry].Line, p.Text)
	}
	fmt.Println(sched)

	_, err = chaos.Parse("at 10s restart abrupt down=3x")
	fmt.Println(err)
	// Output:
	//   10s  restart     line 3: at 10s restart abrupt down=3s shape=stall
	//   30s  restart     line 4: every 30s until 2m restart graceful rolling interval=2s
	//  1m0s  restart     line 4: every 30s until 2m restart graceful rolling interval=2s
	// 1m10s  proxy       line 5: at 70s proxy latency=200ms jitter=50ms loss=1% for 10s
	// 1m30s  restart     line 4: every 30s until 2m restart graceful rolling interval=2s
	// at 10s restart abrupt down=3s shape=stall; every 30s until 2m0s restart graceful rolling interval=2s; at 1m10s proxy latency=200ms jitter=50ms loss=1% for 10s
	// chaos: line 1, col 28: expected a duration after "down=", found "3x"
}

// Check flags what cannot be applied: here a restart whose down time has
// not ended when the next one fires.
func ExampleSchedule_Check() {
	sched, _ := chaos.Parse("at 28s restart down=3s\nevery 30s restart kill down=1s")
	fmt.Println(sched.Check(time.Minute))
	// Output:
	// chaos: line 2: restart at 30s starts while the restart at 28s (line 1) is still down, until 31s
}
