package loadgen

import (
	"fmt"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
)

// Keepalive (docs/metrics.md "Keepalive"): a connection whose path died
// silently (a blackhole, a peer gone without FIN or RST) reports no error
// to a client that only reads, so it would count as up forever. A client
// that has heard nothing from the server for the ping interval sends a
// ping; if nothing at all (the pong, or any other frame) arrives within
// the pong timeout after it, the client closes the connection as dead,
// class ping_timeout, and reconnects with its policy. It works in every
// message mode, since it only needs the server to answer pings, as RFC
// 6455 5.5.2 asks.
//
// A reactor sweeps its shard every quarter of the shorter of the two
// durations instead of giving each client a second deadline (a client's
// one timer belongs to its message mode while it is connected): a dead
// connection is found within interval + timeout + half the shorter one.

// keepalive is one client's liveness state on its current connection.
type keepalive struct {
	rx   int64 // when bytes last arrived from the server, ns from the run's start
	ping int64 // when the unanswered ping went out, noTime when none
}

// keepalives is a reactor's keepalive: one entry per client of its shard.
type keepalives struct {
	c                 []keepalive
	interval, timeout int64 // ns
	tick              int64 // ns between sweeps
	next              int64 // the next sweep, ns from the run's start
	err               error // a dead connection's last error
}

// newKeepalives returns the keepalive of a shard of n clients, or nil when
// cfg turns it off.
func newKeepalives(cfg *Config, n int) *keepalives {
	if cfg.PingInterval <= 0 {
		return nil
	}
	k := &keepalives{
		c:        make([]keepalive, n),
		interval: int64(cfg.PingInterval),
		timeout:  int64(cfg.PongTimeout),
		err:      errNoPong(cfg.PongTimeout),
	}
	k.tick = max(min(k.interval, k.timeout)/4, int64(time.Millisecond))
	return k
}

// errNoPong is the last error of a connection its keepalive found dead.
func errNoPong(timeout time.Duration) error {
	return fmt.Errorf("no answer to a keepalive ping within %s", timeout)
}

// connected starts client j's keepalive on a new connection.
func (k *keepalives) connected(j int32, now int64) { k.c[j] = keepalive{rx: now, ping: noTime} }

// heard notes bytes from the server on client j's connection.
func (k *keepalives) heard(j int32, now int64) { k.c[j].rx = now }

// sweep pings the shard's silent connections and drops those whose ping
// went unanswered past the timeout.
func (r *reactor) sweep(now int64) {
	k := r.ka
	k.next = now + k.tick
	for i := range r.clients {
		j := int32(i)
		if r.clients[j].state != stConnected {
			continue
		}
		s := &k.c[j]
		if s.ping != noTime && s.rx >= s.ping {
			s.ping = noTime // answered
		}
		switch {
		case s.ping != noTime && now-s.ping >= k.timeout:
			r.drop(j, failure{class: connerr.PingTimeout, err: k.err}, now)
		case s.ping == noTime && now-s.rx >= k.interval:
			s.ping = now
			r.control(j, ws.OpPing, nil)
		}
	}
}
