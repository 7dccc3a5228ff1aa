package proxy

import (
	"time"

	"github.com/stampede-dev/stampede/backoff"
)

// The latency fault (fault.Set.Latency, Jitter) delays every chunk of data
// the proxy reads, in each direction on its own: a message and its answer
// are both delayed, so latency=200ms adds about 400 ms to a round trip
// (docs/chaos.md: "delay data by D in each direction"). A chunk's release
// time is its arrival plus Latency ± Jitter, drawn per chunk, but never
// before the release of the chunk ahead of it in the same direction: a TCP
// stream cannot be reordered, so jitter shows as bunching, not reordering.
// Chunks already queued when the fault ends are released at their times,
// and later ones wait behind them.

// releaseAt returns when a chunk that arrived at now (ns) may be written:
// now + latency + (2u-1)·jitter for a uniform draw u in [0, 1). The parser
// keeps jitter <= latency, so the delay is never negative.
func releaseAt(now int64, latency, jitter time.Duration, u float64) int64 {
	d := int64(latency)
	if jitter > 0 {
		d += int64((2*u - 1) * float64(jitter))
	}
	return now + max(d, 0)
}

// jitterDraw is the draw of the n-th delayed chunk of direction d of the
// link with the given key: counter-based, so a seed replays the same delays.
func jitterDraw(seed, key uint64, d int, n uint64) float64 {
	return backoff.U(seed, streamProxyJitter, key, n<<1|uint64(d))
}
