package summary

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
)

// fleet returns transitions bringing clients 0..n-1 up at 0.
func fleet(n int) []results.Transition {
	var trs []results.Transition
	for c := range uint32(n) {
		trs = append(trs, upAt(c, 0))
	}
	return trs
}

// dropAll drops clients 0..n-1 every step from at, and brings each back
// after back.
func dropAll(n int, at, step, back time.Duration) []results.Transition {
	var trs []results.Transition
	for c := range uint32(n) {
		d := at + time.Duration(c)*step
		trs = append(trs, downAt(c, d), upAt(c, d+back))
	}
	return trs
}

func TestDetectOutages(t *testing.T) {
	outage := func(start, ready time.Duration) results.Event {
		return results.Event{Kind: "outage", Start: start, Ready: ready, End: ready, Detected: true}
	}
	for _, tc := range []struct {
		name string
		trs  []results.Transition
		cfg  DetectConfig
		want []results.Event
	}{{
		// All 10 drop within 90 ms at 2 s, back from 3.5 s: one event; a
		// single drop at 5 s afterwards is not another.
		name: "mass drop detected once",
		trs: concat(fleet(10), dropAll(10, ms(2000), ms(10), ms(1500)),
			[]results.Transition{downAt(3, ms(5000)), upAt(3, ms(5100))}),
		want: []results.Event{outage(ms(2000), ms(3500))},
	}, {
		name: "scattered single drops",
		trs: concat(fleet(10),
			[]results.Transition{downAt(1, ms(1000)), upAt(1, ms(1500)), downAt(2, ms(3000)), upAt(2, ms(3500)),
				downAt(3, ms(5000)), upAt(3, ms(5500))}),
	}, {
		name: "two drops separated in time",
		trs:  concat(fleet(10), dropAll(10, ms(2000), ms(1), ms(1000)), dropAll(10, ms(10000), ms(1), ms(2000))),
		want: []results.Event{outage(ms(2000), ms(3000)), outage(ms(10000), ms(12000))},
	}, {
		// 5 of 10 is the default share exactly.
		name: "half the fleet",
		trs:  concat(fleet(10), dropAll(5, ms(1000), ms(100), ms(2000))),
		want: []results.Event{outage(ms(1000), ms(3000))},
	}, {
		name: "less than half",
		trs:  concat(fleet(10), dropAll(4, ms(1000), ms(100), ms(2000))),
	}, {
		// One drop every 300 ms, each back 400 ms later, so about 9 stay
		// connected: at most 4 drops in any 1 s window, fewer than half ...
		name: "scattered drain, default window",
		trs:  concat(fleet(10), dropAll(10, ms(1000), ms(300), ms(400))),
	}, {
		// ... but 7 in the 2 s window from 1 s. Ready is the first return.
		name: "scattered drain, wider window",
		trs:  concat(fleet(10), dropAll(10, ms(1000), ms(300), ms(400))),
		cfg:  DetectConfig{Window: 2 * time.Second},
		want: []results.Event{outage(ms(1000), ms(1400))},
	}, {
		// A drain of the whole fleet with nobody back: the share is of those
		// still connected, which shrinks, so it is found once 4 of the
		// remaining 8 go within 1 s (from 1.6 s); client 0 is back at 6 s.
		name: "whole fleet drains",
		trs:  concat(fleet(10), dropAll(10, ms(1000), ms(300), ms(5000))),
		want: []results.Event{outage(ms(1600), ms(6000))},
	}, {
		// The share counts the clients connected just before: 4 of the 10
		// never connected, so 3 drops of the 6 are an outage.
		name: "share of those connected",
		trs:  concat(fleet(6), dropAll(3, ms(1000), ms(10), ms(1000))),
		want: []results.Event{outage(ms(1000), ms(2000))},
	}, {
		// Nobody back before the run ended: never ready, not ready at
		// Start (which made every refusal a wasted herd attempt).
		name: "never back",
		trs:  concat(fleet(3), []results.Transition{downAt(0, ms(700)), downAt(1, ms(700)), downAt(2, ms(701))}),
		want: []results.Event{{Kind: "outage", Start: ms(700), Detected: true, NeverReady: true}},
	}, {
		name: "stricter share",
		trs:  concat(fleet(10), dropAll(8, ms(1000), ms(10), ms(1000))),
		cfg:  DetectConfig{Share: 0.9},
	}, {
		name: "no transitions",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := DetectOutages(&results.Report{Transitions: tc.trs}, tc.cfg)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("DetectOutages =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func concat(parts ...[]results.Transition) []results.Transition {
	var out []results.Transition
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestDetectConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  DetectConfig
		ok   bool
	}{
		{"zero is default", DetectConfig{}, true},
		{"all", DetectConfig{Share: 1, Window: time.Second}, true},
		{"share above one", DetectConfig{Share: 1.5}, false},
		{"negative share", DetectConfig{Share: -0.1}, false},
		{"NaN share", DetectConfig{Share: math.NaN()}, false},
		{"negative window", DetectConfig{Window: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrDetectConfig)) {
				t.Errorf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
