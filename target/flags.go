package target

import (
	"strconv"
	"time"
)

// Flags returns the `stampede target` flags that reproduce c, one
// "--name=value" per non-zero field, for starting a child process (Group).
// Fields without a flag (Workers, Upgraders, FrameTimeout, WriteTimeout,
// CloseTimeout, MaxMessageSize and the hooks) are not carried: children
// use their defaults.
func (c Config) Flags() []string {
	var f []string
	str := func(name, v string) {
		if v != "" {
			f = append(f, "--"+name+"="+v)
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			str(name, strconv.Itoa(v))
		}
	}
	dur := func(name string, d time.Duration) {
		if d != 0 {
			str(name, d.String())
		}
	}
	str("addr", c.Addr)
	num("backlog", c.Backlog)
	if c.AcceptRate != 0 {
		str("accept-rate", strconv.FormatFloat(c.AcceptRate, 'g', -1, 64))
	}
	num("accept-burst", c.AcceptBurst)
	dur("handshake-cost", c.HandshakeCost)
	dur("handshake-timeout", c.HandshakeTimeout)
	if c.TLS {
		f = append(f, "--tls")
	}
	str("cert", c.CertFile)
	str("key", c.KeyFile)
	num("max-conns", c.MaxConns)
	dur("reject-retry-after", c.RejectRetryAfter)
	dur("hold", c.Hold)
	str("store", c.Store)
	if c.NoDedupe {
		f = append(f, "--no-dedupe")
	}
	num("retention", c.Retention)
	return f
}
