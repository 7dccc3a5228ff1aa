package backoff

// Stream names one independent sequence of random draws of a run. Draws in
// different streams never collide, so adding a new use of randomness does not
// shift the draws of an existing one: a seed keeps meaning the same schedule.
type Stream uint64

// Streams of random draws used across stampede. Values are part of the
// reproducibility contract: never renumber them, only append.
const (
	// StreamSpread is the per-client draw of its own base delay (Spread).
	StreamSpread Stream = 1
	// StreamJitter is the per-attempt draw of a delay's jitter.
	StreamJitter Stream = 2
	// StreamHint is the per-attempt draw of the upward spread added to a
	// server's Retry-After hint.
	StreamHint Stream = 3
	// StreamKey is the per-attempt draw of a WebSocket handshake key and mask.
	StreamKey Stream = 4
	// StreamMessage is the per-message draw of message timing.
	StreamMessage Stream = 5
	// 6 is not used: no draw needs it.
	// StreamProxyLoss is the fault proxy's per-connection draw of the loss
	// fault.
	StreamProxyLoss Stream = 7
	// StreamProxyJitter is the fault proxy's per-chunk draw of latency
	// jitter.
	StreamProxyJitter Stream = 8
	// StreamProcess is a library preset's draw made once per process (a
	// JavaScript module-load draw, shared by every client of the process).
	StreamProcess Stream = 9
	// StreamLoop is a library preset's further draws within one wait (a
	// loop that draws again each time it wakes).
	StreamLoop Stream = 10
)

// U returns a uniform draw in [0, 1) that depends only on its arguments: a
// counter-based generator (SplitMix64 finaliser over the mixed inputs). The
// same (seed, stream, client, n) gives the same value in any order, from any
// goroutine, in a real run and in the simulator alike.
func U(seed uint64, stream Stream, client, n uint64) float64 {
	return float64(Hash(seed, stream, client, n)>>11) * (1.0 / (1 << 53))
}

// Hash returns 64 well-mixed bits that depend only on its arguments; U is built
// on it. Use it where an integer draw is needed (keys, masks, room choice).
func Hash(seed uint64, stream Stream, client, n uint64) uint64 {
	h := mix64(seed ^ 0x9e3779b97f4a7c15)
	h = mix64(h ^ uint64(stream))
	h = mix64(h ^ client)
	return mix64(h ^ n)
}

// mix64 is the SplitMix64 finaliser: a bijection with good avalanche, so
// neighbouring client IDs and attempt numbers give unrelated draws.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
