package proxy

import "golang.org/x/sys/unix"

// The blackhole fault (fault.Set.Blackhole) swallows everything and closes
// nothing, as Toxiproxy's timeout toxic with timeout 0 does: while it lasts
// the proxy reads both sides of every link and throws the bytes away, and
// holds back ends of stream (FIN or RST from one side is passed on only
// when the fault lifts). Clients see no answers and time out on their own:
// a message gets no echo, a handshake no 101. A connection accepted during
// the fault is never connected upstream (nothing could be forwarded on it
// anyway: its request was swallowed); it is swallowed until its client
// closes it. When the fault lifts, established links relay again, but a
// stream that lost bytes mid-message is usually broken for the protocol on
// top: most clients will have timed out and reconnected by then.

// swallow counts n bytes read and thrown away by a blackhole.
func swallow(r *reactor, n int) { r.stats.swallowedBytes.Add(uint64(n)) }

// swallowDead reads and discards what the client of a link accepted during
// a blackhole sends, and closes the link when the client goes away.
func (r *reactor) swallowDead(l *link) {
	for reads := 0; l.readable[0]; reads++ {
		if reads == proxyMaxReads {
			r.again = append(r.again, againEntry{slot: l.slot, gen: l.gen})
			return
		}
		n, err := unix.Read(l.fd[0], r.buf)
		switch {
		case err == unix.EAGAIN:
			l.readable[0] = false
		case err == unix.EINTR:
		case err != nil || n == 0:
			r.closeLink(l)
			return
		default:
			r.count(0, n)
			swallow(r, n)
		}
	}
}
