package proxy

import (
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

func TestReleaseAt(t *testing.T) {
	const now = int64(1_000_000_000) // 1 s on the reactor clock
	cases := []struct {
		name            string
		latency, jitter time.Duration
		u               float64
		want            int64
	}{
		{"latency only ignores the draw", 200 * time.Millisecond, 0, 0.9, now + 200e6},
		{"u=0.5 is the middle of the band", 200 * time.Millisecond, 50 * time.Millisecond, 0.5, now + 200e6},
		{"u=0 is latency-jitter", 200 * time.Millisecond, 50 * time.Millisecond, 0, now + 150e6},
		{"u=0.75 is latency+jitter/2", 200 * time.Millisecond, 50 * time.Millisecond, 0.75, now + 225e6},
		{"jitter equal to latency can reach zero delay", 10 * time.Millisecond, 10 * time.Millisecond, 0, now},
		{"no fault: no delay", 0, 0, 0.3, now},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := releaseAt(now, c.latency, c.jitter, c.u); got != c.want {
				t.Errorf("releaseAt = %d, want %d", got, c.want)
			}
		})
	}
}

func TestBucket(t *testing.T) {
	const rate = 100_000 // bytes/s: burst 2,000 bytes (20 ms)
	var b bucket
	steps := []struct {
		name   string
		now    int64 // ns
		want   int
		n      int
		wait   int64
		refund int
	}{
		{"a new generation starts with a full burst", 0, 5000, 2000, 0, 0},
		{"empty: wait for the burst to refill", 0, 5000, 0, 20e6, 0},
		{"a small want waits only for itself", 0, 100, 0, 1e6, 0},
		{"10 ms later: 1,000 bytes", 10e6, 5000, 1000, 0, 400},
		{"the refund is taken next", 10e6, 5000, 400, 0, 0},
		{"an hour idle refills to the burst, no more", 3600e9, 1e6, 2000, 0, 0},
	}
	for _, s := range steps {
		n, wait := b.take(s.now, rate, 1, s.want)
		if n != s.n || wait != s.wait {
			t.Fatalf("%s: take = (%d, %d), want (%d, %d)", s.name, n, wait, s.n, s.wait)
		}
		b.refund(s.refund)
	}
	if n, _ := b.take(3600e9, rate, 2, 9999); n != 2000 {
		t.Errorf("a new fault generation: took %d, want a full burst of 2000", n)
	}
}

func TestBurstOf(t *testing.T) {
	cases := []struct {
		rate int64
		want float64
	}{{1, 1}, {50, 1}, {12_500, 250}, {1_000_000, 20_000}, {1e9, 64 << 10}}
	for _, c := range cases {
		if got := burstOf(c.rate); got != c.want {
			t.Errorf("burstOf(%d) = %v, want %v", c.rate, got, c.want)
		}
	}
}

func TestLostIsTheSeededDraw(t *testing.T) {
	const seed, gen = 42, 3
	dropped := 0
	for serial := uint64(0); serial < 1000; serial++ {
		key := linkKey(0, 0, serial)
		want := backoff.U(seed, streamProxyLoss, key, gen) < 0.25
		if got := lost(seed, key, gen, 0.25); got != want {
			t.Fatalf("serial %d: lost = %v, want %v", serial, got, want)
		}
		if want {
			dropped++
		}
	}
	// 1000 draws at 25 %: the exact count is fixed by the seed.
	if dropped < 200 || dropped > 300 {
		t.Errorf("%d of 1000 dropped at 25%%", dropped)
	}
	if !lost(seed, 7, gen, 1) {
		t.Error("loss=100% must drop every link")
	}
}

func TestLinkKeyKeepsProcessesApart(t *testing.T) {
	cases := []struct {
		proc, reactor int
		serial        uint64
		want          uint64
	}{
		{0, 0, 0, 0},
		{0, 0, 5, 5},
		{0, 1, 5, 1<<40 | 5},
		{3, 2, 7, 3<<48 | 2<<40 | 7},
	}
	for _, c := range cases {
		if got := linkKey(c.proc, c.reactor, c.serial); got != c.want {
			t.Errorf("linkKey(%d, %d, %d) = %#x, want %#x", c.proc, c.reactor, c.serial, got, c.want)
		}
	}
}

func TestTimerHeapOrder(t *testing.T) {
	var h timerHeap
	for _, at := range []int64{50, 10, 40, 10, 30, 20, 60, 0} {
		h.push(timer{at: at})
	}
	var got []int64
	for h.len() > 0 {
		got = append(got, h.pop().at)
	}
	want := []int64{0, 10, 10, 20, 30, 40, 50, 60}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("popped %v, want %v", got, want)
		}
	}
}

func TestProxyConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"upstream only", Config{Upstream: "127.0.0.1:9"}, true},
		{"no upstream", Config{}, false},
		{"upstream without port", Config{Upstream: "127.0.0.1"}, false},
		{"listen needs IP:port", Config{Upstream: "127.0.0.1:9", Listen: "localhost:80"}, false},
		{"negative backlog", Config{Upstream: "127.0.0.1:9", Backlog: -1}, false},
		{"too many reactors", Config{Upstream: "127.0.0.1:9", Reactors: 65}, false},
		{"negative connect timeout", Config{Upstream: "127.0.0.1:9", ConnectTimeout: -time.Second}, false},
	}
	for _, c := range cases {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
