package proxy

import "github.com/stampede-dev/stampede/backoff"

// The loss fault (fault.Set.Loss) drops connections, not packets (TCP
// would hide packet loss as retransmits): when the fault starts every
// established link is dropped with probability Loss, and so is every
// connection accepted while it lasts. A dropped link is reset (reset.go).
// The draws are counter-based (backoff.U) over the run's seed, the link's
// key and the fault's generation, so a seed drops the same links again: for
// a given seed and order of connections the number dropped is exact.

// Streams of the proxy's random draws, from backoff's one list of streams.
const (
	streamProxyLoss   = backoff.StreamProxyLoss
	streamProxyJitter = backoff.StreamProxyJitter
)

// linkKey identifies a link across a proxy group: its process's index, its
// reactor's, and its number in the order the reactor accepted them.
func linkKey(proc, reactor int, serial uint64) uint64 {
	return uint64(proc)<<48 | uint64(reactor&0xff)<<40 | serial&(1<<40-1)
}

// lost reports whether the link with key is dropped by fault generation gen
// with loss probability p (0..1).
func lost(seed, key, gen uint64, p float64) bool {
	return p >= 1 || backoff.U(seed, streamProxyLoss, key, gen) < p
}
