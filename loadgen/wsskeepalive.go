package loadgen

import (
	"sync"
	"time"

	"github.com/stampede-dev/stampede/wsdial"
)

// wssKeepalive is the keepalive of one wss:// connection (docs/metrics.md
// "Keepalive"), as a reactor's sweep is for ws:// ones: a timer, no
// goroutine while it waits, checks every quarter of the shorter duration
// whether the server has been silent for the ping interval (then it
// pings) or has not answered a ping within the pong timeout (then it
// closes the connection, and dead reports it).
type wssKeepalive struct {
	conn              *wsdial.Conn
	interval, timeout time.Duration
	tick              time.Duration

	mu      sync.Mutex
	t       *time.Timer
	pingAt  time.Time // the unanswered ping, zero when none
	dead    bool
	stopped bool
}

// startWSSKeepalive starts conn's keepalive, or returns nil when cfg turns
// it off.
func startWSSKeepalive(cfg *Config, conn *wsdial.Conn) *wssKeepalive {
	if cfg.PingInterval <= 0 {
		return nil
	}
	k := &wssKeepalive{conn: conn, interval: cfg.PingInterval, timeout: cfg.PongTimeout}
	k.tick = max(min(k.interval, k.timeout)/4, time.Millisecond)
	k.mu.Lock()
	k.t = time.AfterFunc(k.tick, k.check)
	k.mu.Unlock()
	return k
}

func (k *wssKeepalive) check() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	now, rx := time.Now(), k.conn.LastRead()
	if !k.pingAt.IsZero() && !rx.Before(k.pingAt) {
		k.pingAt = time.Time{} // answered
	}
	switch {
	case !k.pingAt.IsZero() && now.Sub(k.pingAt) >= k.timeout:
		k.dead, k.stopped = true, true
		k.conn.Close() // the reader returns; hold reports ping_timeout
		return
	case k.pingAt.IsZero() && now.Sub(rx) >= k.interval:
		k.pingAt = now
		if k.conn.Ping() != nil {
			k.stopped = true // the reader sees the connection end
			return
		}
	}
	k.t.Reset(k.tick)
}

// stop ends the keepalive and reports whether it found the connection
// dead. Safe on nil (keepalive off).
func (k *wssKeepalive) stop() (dead bool) {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	k.t.Stop()
	return k.dead
}
