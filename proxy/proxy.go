// Package proxy is stampede's TCP fault proxy: a relay between the fleet
// and the target with latency, bandwidth, reset, blackhole and loss faults
// that a chaos schedule (package chaos) switches on and off, a process
// group of proxies on one port, and their HTTP control API.
package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/spec"

	"github.com/stampede-dev/stampede/fault"
)

// The fault proxy is a TCP relay between the fleet and the target whose
// faults a schedule switches on and off, in the spirit of Toxiproxy: netem
// is not available on these machines, so delay, throttling, resets, black
// holes and dropped connections come from here. One file per fault, as
// toxiproxy keeps its toxics: latency.go, bandwidth.go, reset.go,
// blackhole.go, loss.go.
//
//	          client side                                upstream side
//	fleet ──> fd[0] ──read──> shared buf ─┬─ no fault, queue empty: write ──> fd[1] ──> target
//	                                      └─ else: chunk queue (release time,
//	                                         token bucket) ── timer heap ──>
//	fleet <── fd[0] <──write─ chunk queue / shared buf <──read── fd[1] <── target
//
// A proxy process runs one or more reactors. Each reactor is one goroutine
// with its own SO_REUSEPORT listener (the kernel spreads new connections
// over them), its own epoll instance, timer heap and one shared read
// buffer. A relayed connection (a link) is two raw non-blocking sockets in
// that epoll instance, edge-triggered: no goroutine and no buffer per
// connection while no fault holds data back. Bytes that cannot be written
// at once (a slow peer, a latency or bandwidth fault) wait in a per-
// direction queue of chunks with release times, which keeps their order.
//
// Process model. A link costs two open files, so one process relays at
// most about 9,900 connections under the 20,000 open-file limit. A
// Group therefore runs several `stampede proxy` processes on one port
// as an SO_REUSEPORT group, PerProcess (7,500) links each: `stampede
// run --proxy` starts ProcsFor(clients) of them (two for 10,000
// clients) and the supervisor reaches every one through its HTTP control
// API (ControlHandler).
//
// Why epoll and not a goroutine pair per link with io.Copy: measured with
// lab/proxy-bench.sh's setup (10,000 echo clients at 1 msg/s, two
// processes of 5,000 links, 2 loaded cores), this reactor added 0.18 ms to
// the message round-trip p50 (0.18 -> 0.35 ms) with 17 MiB peak RSS and
// 3.5 s CPU per process over 20 s. Two goroutines per link copying through
// a 4 KiB buffer each: p50 0.46 ms, 117 MiB and 4.2 s per process.
// io.Copy between two TCP conns splices through a pipe that each blocked
// copy holds (two more files per direction): the processes hit the open-
// file limit at 7,282 of 10,000 connections, p50 2.3 ms, 12 s CPU each.
//
// What clients see differs little from a direct connection. A target
// that refuses (down, port closed) is mirrored: the proxy closes its own
// port until a probe connects again (mirror.go), so clients are
// refused too, except the few already accepted, which are reset. A target
// that does not answer (stalled, backlog full) keeps clients connected to
// the proxy without an upgrade answer: handshake_timeout where a direct
// client might see a SYN timeout; after ConnectTimeout the client is reset.

// Defaults applied to zero fields of a Config.
const (
	// DefaultListen is where a proxy listens without Listen.
	DefaultListen = "127.0.0.1:0"
	// DefaultBacklog is the proxy's listen backlog: large, so the proxy
	// never adds a queue the target does not have (the kernel caps it at
	// net.core.somaxconn).
	DefaultBacklog = 4096
	// DefaultConnectTimeout bounds the upstream connect of a link.
	DefaultConnectTimeout = 10 * time.Second
	// fileReserve is the open files a proxy process keeps for itself
	// (listeners, epoll, eventfds, control API, stdio) when sizing MaxConns.
	fileReserve = 100
)

// Config configures a fault proxy. The zero value of every field but
// Upstream means its default.
type Config struct {
	// Listen is the address clients connect to, "IP:port"; port 0 picks a
	// free port. Every listener has SO_REUSEPORT, so several processes may
	// share the port. Default 127.0.0.1:0.
	Listen string `json:"listen"`
	// Upstream is the server every link connects to, "host:port", resolved
	// once at start. Required.
	Upstream string `json:"upstream"`
	// Reactors is the number of reactor goroutines, each with its own
	// listener on the port. Default 1.
	Reactors int `json:"reactors"`
	// Backlog is the listen backlog of each listener. Default 4096.
	Backlog int `json:"backlog"`
	// MaxConns caps the links open at once; a connection above it is reset
	// at once (and counted in Stats.Refused). Default: what the
	// process's open-file limit allows, two files per link.
	MaxConns int `json:"max_conns"`
	// ConnectTimeout bounds the upstream connect of a link; when it passes
	// the client is reset. Default 10 s.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// SourceIP is the local address of upstream connections, bound with
	// IP_BIND_ADDRESS_NO_PORT (its own ephemeral port range towards the
	// upstream). The zero Addr lets the kernel choose.
	SourceIP netip.Addr `json:"source_ip,omitzero"`
	// KeepListening keeps the listener open while the upstream refuses
	// connections, resetting each client after its connect. By default the
	// proxy closes its listener when an upstream connect is refused, so
	// clients are refused as they would be by the upstream, and listens
	// again as soon as a probe connects (mirror.go).
	KeepListening bool `json:"keep_listening,omitempty"`
	// Seed keys the random draws of jitter and loss, so a run's seed gives
	// the same faults again.
	Seed uint64 `json:"seed"`
	// Proc is this proxy's index in a group; it keeps the draws of the
	// group's processes apart.
	Proc int `json:"proc"`
	// ControlToken is the token of the process's control API (docs/cli.md,
	// "Control API"); empty: the process draws one at start. A Group sets
	// it for its processes in the plan on their stdin, never on a command
	// line, where any user of the machine could read it.
	ControlToken string `json:"control_token,omitempty"`
}

// Validate reports the first unusable field as a *spec.FieldError
// ("Proxy.Upstream").
func (c Config) Validate() error {
	bad := func(field, format string, a ...any) error { return spec.Errorf("Proxy."+field, format, a...) }
	switch {
	case c.Upstream == "":
		return bad("Upstream", "required")
	case c.Reactors < 0 || c.Reactors > 64:
		return bad("Reactors", "must be within 0..64, got %d", c.Reactors)
	case c.Backlog < 0:
		return bad("Backlog", "must not be negative, got %d", c.Backlog)
	case c.MaxConns < 0:
		return bad("MaxConns", "must not be negative, got %d", c.MaxConns)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout", "must not be negative, got %s", c.ConnectTimeout)
	case c.Proc < 0 || c.Proc > 0xffff:
		return bad("Proc", "must be within 0..65535, got %d", c.Proc)
	}
	if c.Listen != "" {
		if _, err := netip.ParseAddrPort(c.Listen); err != nil {
			return bad("Listen", "%q: want IP:port", c.Listen)
		}
	}
	if _, _, err := net.SplitHostPort(c.Upstream); err != nil {
		return bad("Upstream", "%q: want host:port", c.Upstream)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Reactors == 0 {
		c.Reactors = 1
	}
	if c.Backlog == 0 {
		c.Backlog = DefaultBacklog
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxConns == 0 {
		var r syscall.Rlimit
		c.MaxConns = 10000
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) == nil && r.Cur < 1<<30 {
			c.MaxConns = max(1, (int(r.Cur)-fileReserve)/2)
		}
	}
	return c
}

// Stats counts what a proxy did since it started.
type Stats struct {
	// Active is the number of links open now.
	Active int64 `json:"active"`
	// Accepted counts client connections accepted.
	Accepted uint64 `json:"accepted"`
	// Reset counts links reset by the reset fault (new and established).
	Reset uint64 `json:"reset"`
	// Dropped counts links dropped by the loss fault.
	Dropped uint64 `json:"dropped"`
	// Blackholed counts links accepted during a blackhole, never connected
	// upstream.
	Blackholed uint64 `json:"blackholed"`
	// Refused counts links whose upstream connect failed or timed out, and
	// connections above MaxConns: their clients were reset.
	Refused uint64 `json:"refused"`
	// BytesUp and BytesDown count bytes read from clients and from the
	// upstream.
	BytesUp   uint64 `json:"bytes_up"`
	BytesDown uint64 `json:"bytes_down"`
	// Mirrored counts the times a listener was closed because the upstream
	// refused, so clients were refused too.
	Mirrored uint64 `json:"mirrored"`
	// Swallowed counts bytes a blackhole read and threw away.
	Swallowed uint64 `json:"swallowed"`
	// Fault is the active fault set in schedule words, "" for none.
	Fault string `json:"fault"`
}

// add sums o into s (not Fault).
func (s *Stats) add(o *Stats) {
	s.Active += o.Active
	s.Accepted += o.Accepted
	s.Reset += o.Reset
	s.Dropped += o.Dropped
	s.Blackholed += o.Blackholed
	s.Refused += o.Refused
	s.BytesUp += o.BytesUp
	s.BytesDown += o.BytesDown
	s.Swallowed += o.Swallowed
	s.Mirrored += o.Mirrored
}

// faultState is one generation of the active fault set. Set publishes a
// new one through an atomic pointer; reactors pick it up when woken.
type faultState struct {
	f   fault.Set
	gen uint64 // 1, 2, ...: the n of the loss draws
}

// Proxy is a running fault proxy in this process. It implements
// supervisor.Proxy, so a supervisor.Supervisor switches its faults.
type Proxy struct {
	cfg      Config
	addr     netip.AddrPort
	reactors []*reactor
	fault    atomic.Pointer[faultState]
	setMu    sync.Mutex // orders Set calls (generations grow with them) and Close
	closed   bool       // under setMu: the reactors' eventfds are gone
	wg       sync.WaitGroup
	close    sync.Once
}

// Start starts a fault proxy with no fault active and returns when
// its listeners accept.
func Start(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	up, err := net.ResolveTCPAddr("tcp", cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: Upstream %q: %w", cfg.Upstream, err)
	}
	upstream := up.AddrPort()
	listen := netip.MustParseAddrPort(cfg.Listen)
	p := &Proxy{cfg: cfg}
	p.fault.Store(&faultState{})
	for i := 0; i < cfg.Reactors; i++ {
		r, err := newReactor(p, i, listen, upstream)
		if err != nil {
			p.Close()
			return nil, err
		}
		if i == 0 {
			listen = r.addr // the port that port 0 picked, for the others
			p.addr = r.addr
		}
		p.reactors = append(p.reactors, r)
	}
	for _, r := range p.reactors {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			r.run()
		}()
	}
	return p, nil
}

// Addr returns the address clients connect to, "IP:port".
func (p *Proxy) Addr() string { return p.addr.String() }

// Set switches the fault set f on, replacing the previous one; the zero
// fault.Set switches every fault off. It returns at once: the reactors
// apply it within microseconds, resetting or dropping established links
// when f says so. Safe for concurrent use and under load.
func (p *Proxy) Set(f fault.Set) {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	gen := p.fault.Load().gen + 1
	p.fault.Store(&faultState{f: f, gen: gen})
	if p.closed {
		return
	}
	for _, r := range p.reactors {
		r.wakeUp()
	}
}

// Fault returns the fault set last given to Set.
func (p *Proxy) Fault() fault.Set { return p.fault.Load().f }

// Stats returns the proxy's counters summed over its reactors.
func (p *Proxy) Stats() Stats {
	var s Stats
	for _, r := range p.reactors {
		st := r.stats.load()
		s.add(&st)
	}
	s.Fault = p.Fault().Words()
	return s
}

// Close stops accepting, closes every link and returns when the reactors
// have stopped.
func (p *Proxy) Close() error {
	p.close.Do(func() {
		p.setMu.Lock()
		defer p.setMu.Unlock()
		for _, r := range p.reactors {
			r.stop()
		}
		p.wg.Wait()
		for _, r := range p.reactors {
			r.release()
		}
		p.closed = true
	})
	return nil
}
