package proxy

import "math"

// The bandwidth fault (fault.Set.Bandwidth) limits each direction of each
// link to a rate in bytes per second with a token bucket. The bucket holds
// at most burstOf(rate) bytes (20 ms worth, between 1 B and 64 KiB), so a
// link that was idle sends a short burst and then the rate. A bucket starts
// full when its fault generation starts.

// maxBurst caps a bucket, so a fast limit still paces in small steps.
const maxBurst = 64 << 10

// burstOf returns the bucket size of a rate in bytes per second.
func burstOf(rate int64) float64 {
	return math.Max(1, math.Min(maxBurst, float64(rate)/50))
}

// bucket is the token bucket of one direction of a link.
type bucket struct {
	tokens float64 // bytes that may be written now
	last   int64   // when tokens was last brought up to date, ns
	gen    uint64  // the fault generation it was filled for
}

// take returns how many of want bytes may be written at now (ns) at rate
// bytes per second under fault generation gen, and takes them; when none
// may, it returns 0 and how long until min(want, burst) bytes may.
func (b *bucket) take(now, rate int64, gen uint64, want int) (n int, wait int64) {
	burst := burstOf(rate)
	if b.gen != gen {
		b.tokens, b.last, b.gen = burst, now, gen
	}
	if now > b.last {
		b.tokens = math.Min(burst, b.tokens+float64(now-b.last)*float64(rate)/1e9)
		b.last = now
	}
	if b.tokens >= 1 {
		n = min(want, int(b.tokens))
		b.tokens -= float64(n)
		return n, 0
	}
	need := math.Min(float64(want), burst) - b.tokens
	return 0, int64(math.Ceil(need * 1e9 / float64(rate)))
}

// refund gives back tokens taken for bytes the socket did not accept.
func (b *bucket) refund(n int) { b.tokens += float64(n) }
