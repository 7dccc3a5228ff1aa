package spec

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/stampede-dev/stampede/fault"
	"github.com/stampede-dev/stampede/session"
)

// Defaults and bounds of a Server.
const (
	DefaultAddr                   = "127.0.0.1:0"
	DefaultBacklog                = 128
	DefaultServerHandshakeTimeout = 5 * time.Second
	DefaultRejectRetryAfter       = time.Second
	DefaultUpgraders              = 64
	DefaultFrameTimeout           = 5 * time.Second
	DefaultWriteTimeout           = 5 * time.Second
	DefaultCloseTimeout           = 2 * time.Second
	DefaultMaxMessageSize         = 1 << 20
	DefaultLimitStatus            = 429
	DefaultLimitRetryAfter        = time.Second
	DefaultTLSCertKind            = "ecdsa-p256"
	DefaultTLSVersion             = "1.3"
	DefaultTLSTicketRotate        = 24 * time.Hour
	// MaxProcs caps Server.Procs as a spec: a simulated group may be
	// large; a real run's cap, what one host starts, is lower (target,
	// storm).
	MaxProcs = 1 << 16
)

// The accept rates a server paces, besides 0 (unlimited): the bounds of
// the accept-rate fault, which the chaos schedule checks where it is
// written (fault.MinAcceptRate says why these).
const (
	MinAcceptRate = fault.MinAcceptRate
	MaxAcceptRate = fault.MaxAcceptRate
)

// Server is the spec of the WebSocket server a storm is aimed at: what
// target runs and sim models. The zero value is a plain ws:// echo server
// on 127.0.0.1 with a backlog of 128 and no limits; every zero field means
// its documented default. It serialises to JSON so a run records the
// server it used and a plan carries it to a child process.
type Server struct {
	// Addr is the listen address, "IP:port" (IPv6 bracketed); port 0 picks
	// a free port. Default 127.0.0.1:0.
	Addr string `json:"addr"`
	// Procs is the number of server processes in one SO_REUSEPORT group on
	// Addr's port, each holding its share of the connections (and of
	// AcceptRate, where a run shares it out). 0: one for a lone server;
	// where a run or a simulation sizes the group, one per PerProcess
	// clients of its fleet. At most MaxProcs.
	Procs int `json:"procs,omitempty"`
	// Backlog is the listen backlog (accept queue length; the kernel holds
	// Backlog+1 and caps it at net.core.somaxconn). Default 128, the
	// historical SOMAXCONN, small enough that a reconnect herd overflows it.
	Backlog int `json:"backlog"`
	// AcceptRate caps accepts per second, a capacity-limited server: above
	// it the accept queue fills and the kernel drops SYNs. 0 = unlimited;
	// otherwise between MinAcceptRate and MaxAcceptRate.
	AcceptRate float64 `json:"accept_rate"`
	// AcceptBurst is how many accepts may happen at once after an idle
	// moment when AcceptRate is set. Default: 10 ms worth of AcceptRate,
	// at least 1.
	AcceptBurst int `json:"accept_burst"`
	// AdmitRamp is an admission ramp: for AdmitRamp after a restarted
	// process starts accepting, its accept rate rises linearly from
	// AdmitFloor to AcceptRate, so a restarted server takes the returning
	// herd slowly while its caches and pools warm up (a gateway's 5/s,
	// then 20/s, then full). A lone `stampede target` ramps from its start
	// (it is the restart); in a run, the processes the run starts begin at
	// full rate and those the chaos schedule restarts ramp. Needs
	// AcceptRate. 0: full rate at once.
	AdmitRamp time.Duration `json:"admit_ramp,omitempty"`
	// AdmitFloor is the accept rate an admission ramp starts from. Default
	// a tenth of AcceptRate (at least MinAcceptRate).
	AdmitFloor float64 `json:"admit_floor,omitempty"`
	// Shed is load shedding with a hint: while over capacity (more
	// upgrades than AcceptRate allows), a new upgrade is answered 503 with
	// a Retry-After drawn uniformly from 1 s to Shed in whole seconds,
	// instead of waiting in a full accept queue; accepts are then not
	// paced, since a rejection is cheap. Needs AcceptRate; at least 1 s.
	// 0: no shedding, the queue fills and SYNs are dropped.
	Shed time.Duration `json:"shed,omitempty"`
	// HandshakeCost is CPU time burned (a busy loop) for every admitted
	// upgrade, standing in for TLS and authentication work. Default 0.
	HandshakeCost time.Duration `json:"handshake_cost"`
	// HandshakeTimeout bounds the TLS handshake plus the HTTP upgrade of
	// one connection. Default 5 s.
	HandshakeTimeout time.Duration `json:"handshake_timeout"`
	// TLS serves wss:// with a self-signed certificate generated at start
	// for 127.0.0.1, ::1 and localhost, unless CertFile and KeyFile are set.
	TLS bool `json:"tls"`
	// CertFile and KeyFile are a PEM certificate and key to serve wss://
	// with; setting them implies TLS. Both or neither.
	CertFile string `json:"cert_file,omitempty"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `json:"key_file,omitempty"`
	// TLSCertKind is the key of the self-signed certificate: ecdsa-p256,
	// rsa-2048 or rsa-4096 (package tlsconf); setting it implies TLS.
	// Default ecdsa-p256 when TLS is on without CertFile.
	TLSCertKind string `json:"tls_cert_kind,omitempty"`
	// TLSVersion is the highest TLS version served, "1.2" or "1.3".
	// Default "1.3" when TLS is on.
	TLSVersion string `json:"tls_version,omitempty"`
	// TLSNoTickets turns session tickets off: every handshake is full.
	TLSNoTickets bool `json:"tls_no_tickets,omitempty"`
	// TLSTicketKeys is a session-ticket key file (tlsconf.KeyFile) read
	// at start and every minute, created if absent, so that keys survive a
	// restart; every process of a group reads it. Empty: keys in memory,
	// shared by a group's processes and lost when it restarts. Setting it
	// implies TLS.
	TLSTicketKeys string `json:"tls_ticket_keys,omitempty"`
	// TLSTicketRotate is how old the file's newest ticket key may grow
	// before a new one encrypts (the older ones still decrypt, a week of
	// them). Default 24 h with TLSTicketKeys.
	TLSTicketRotate time.Duration `json:"tls_ticket_rotate,omitempty"`
	// MaxConns caps open WebSocket connections: above it an upgrade is
	// answered 503 with Retry-After: RejectRetryAfter. 0 = no cap (the
	// process's open-file limit still applies).
	MaxConns int `json:"max_conns"`
	// RejectRetryAfter is the Retry-After sent with a MaxConns rejection,
	// in whole seconds (rounded up). Default 1 s.
	RejectRetryAfter time.Duration `json:"reject_retry_after"`
	// HTTPLimit caps the requests per second the HTTP endpoint (docs/cli.md)
	// answers 200, with a token bucket; above it requests are answered
	// LimitStatus with Retry-After: LimitRetryAfter. 0 = no limit;
	// otherwise between MinAcceptRate and MaxAcceptRate.
	HTTPLimit float64 `json:"http_limit"`
	// HTTPBurst is the token bucket's capacity under HTTPLimit: how many
	// requests may be answered 200 at once after an idle moment. Default:
	// 100 ms worth of HTTPLimit, at least 1.
	HTTPBurst int `json:"http_burst"`
	// LimitStatus is the status of a request above HTTPLimit: 429 (Too
	// Many Requests), 503 (Service Unavailable) or 529 (overloaded, as
	// some large APIs answer). Default 429.
	LimitStatus int `json:"limit_status"`
	// LimitRetryAfter is the Retry-After sent with LimitStatus, in whole
	// seconds (rounded up). Default 1 s.
	LimitRetryAfter time.Duration `json:"limit_retry_after"`
	// Hold makes the server listen at once but accept nothing for Hold
	// after start: the "stall" shape of a restart (port open, backlog fills,
	// SYNs time out). Its ready line comes when it ends. Default 0.
	Hold time.Duration `json:"hold"`
	// StartReject, if set, makes the server answer every upgrade as a
	// reject window does, from its start for StartReject.For: a process
	// (re)started during a reject window joins it before it admits
	// anyone. Default nil.
	StartReject *Rejection `json:"start_reject,omitempty"`
	// Workers is the number of goroutines that read frames of readable
	// connections. Default max(4, 2*GOMAXPROCS).
	Workers int `json:"workers"`
	// Upgraders bounds the upgrades in progress; when all are busy the
	// server stops accepting and the backlog fills. Default 64.
	Upgraders int `json:"upgraders"`
	// FrameTimeout bounds reading one message once its connection is
	// readable, so a partial frame cannot hold a worker. Default 5 s.
	FrameTimeout time.Duration `json:"frame_timeout"`
	// WriteTimeout bounds writing one frame. Default 5 s.
	WriteTimeout time.Duration `json:"write_timeout"`
	// CloseTimeout is how long a graceful shutdown waits for clients to
	// answer its close frame before closing their connections. Default 2 s.
	CloseTimeout time.Duration `json:"close_timeout"`
	// MaxMessageSize caps one message (all fragments) in bytes; a larger
	// one closes the connection with 1009. Default 1 MiB.
	MaxMessageSize int64 `json:"max_message_size"`
	// Store, when set, makes the server speak the message protocol
	// (docs/protocol.md) on the store at this URL: file:///dir or a plain
	// path (the embedded store), redis://..., postgres://... (see
	// store.Open; the Redis and PostgreSQL ones only in a binary that
	// imports store/redisstore and store/pgstore, as cmd/stampede does).
	// Empty: the server echoes.
	Store string `json:"store,omitempty"`
	// Session makes the server speak a session protocol minimally
	// (package session/serve): "socketio" or "mqtt", so that a fleet with
	// that Client.Session.Protocol holds sessions with it. Empty: none.
	Session string `json:"session,omitempty"`
	// NoDedupe makes the protocol store a resent message again under a new
	// seq and deliver it again, to show what dedupe prevents. Needs Store.
	NoDedupe bool `json:"no_dedupe,omitempty"`
	// Retention is how many messages per room the store keeps for resume;
	// a resume from before them gets resume_gap. Default
	// store.DefaultRetention (10,000). Needs Store.
	Retention int `json:"retention,omitempty"`
}

// Rejection is a window in which every upgrade is answered Status with a
// Retry-After of RetryAfter (whole seconds, rounded up; 0 sends none).
type Rejection struct {
	Status     int           `json:"status"`
	RetryAfter time.Duration `json:"retry_after"`
	For        time.Duration `json:"for"`
}

// Validate reports the first invalid field as a *FieldError
// ("Server.Backlog").
func (c Server) Validate() error {
	bad := func(field, format string, a ...any) error { return Errorf("Server."+field, format, a...) }
	if c.Addr != "" {
		if _, err := ParseAddr(c.Addr); err != nil {
			return bad("Addr", "%v", err)
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Procs", int64(c.Procs)}, {"Backlog", int64(c.Backlog)}, {"AcceptBurst", int64(c.AcceptBurst)},
		{"MaxConns", int64(c.MaxConns)}, {"Workers", int64(c.Workers)},
		{"Upgraders", int64(c.Upgraders)}, {"MaxMessageSize", c.MaxMessageSize},
		{"HandshakeCost", int64(c.HandshakeCost)}, {"HandshakeTimeout", int64(c.HandshakeTimeout)},
		{"RejectRetryAfter", int64(c.RejectRetryAfter)}, {"Hold", int64(c.Hold)},
		{"FrameTimeout", int64(c.FrameTimeout)}, {"WriteTimeout", int64(c.WriteTimeout)},
		{"CloseTimeout", int64(c.CloseTimeout)}, {"Retention", int64(c.Retention)},
		{"HTTPBurst", int64(c.HTTPBurst)}, {"LimitRetryAfter", int64(c.LimitRetryAfter)},
		{"AdmitRamp", int64(c.AdmitRamp)}, {"Shed", int64(c.Shed)},
	} {
		if f.v < 0 {
			return bad(f.name, "%d must not be negative", f.v)
		}
	}
	if c.Procs > MaxProcs {
		return bad("Procs", "%d is above the cap of %d processes", c.Procs, MaxProcs)
	}
	if r := c.StartReject; r != nil && (r.Status < 400 || r.Status > 599 || r.RetryAfter < 0 || r.For < 0) {
		return bad("StartReject", "status %d must be 400-599 and durations not negative", r.Status)
	}
	if err := CheckAcceptRate(c.AcceptRate); err != "" {
		return bad("AcceptRate", "%v %s", c.AcceptRate, err)
	}
	if err := CheckAcceptRate(c.HTTPLimit); err != "" {
		return bad("HTTPLimit", "%v %s", c.HTTPLimit, err)
	}
	if err := c.validateAdmission(); err != nil {
		return err
	}
	switch c.LimitStatus {
	case 0, 429, 503, 529:
	default:
		return bad("LimitStatus", "%d must be 429, 503 or 529", c.LimitStatus)
	}
	switch {
	case c.Store == "" && c.NoDedupe:
		return bad("NoDedupe", "needs {Server.Store} (the message protocol)")
	case c.Store == "" && c.Retention != 0:
		return bad("Retention", "needs {Server.Store} (the message protocol)")
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if err := c.validSession(); err != nil {
		return err
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return bad("CertFile", "goes together with {Server.KeyFile}")
	}
	d := c.WithDefaults()
	if d.HandshakeCost >= d.HandshakeTimeout {
		return bad("HandshakeCost", "%v must be below {Server.HandshakeTimeout} %v", d.HandshakeCost, d.HandshakeTimeout)
	}
	return nil
}

// validateAdmission checks the knobs that shape admission (the ramp, its
// floor and shedding), each of which needs the accept rate it works on.
func (c Server) validateAdmission() error {
	bad := func(field, format string, a ...any) error { return Errorf("Server."+field, format, a...) }
	if c.AdmitFloor != 0 && c.AdmitRamp == 0 {
		return bad("AdmitFloor", "needs {Server.AdmitRamp} (the ramp it starts)")
	}
	if c.AdmitRamp > 0 {
		switch {
		case c.AcceptRate == 0:
			return bad("AdmitRamp", "needs {Server.AcceptRate} (the rate it ramps up to)")
		case c.AdmitFloor != 0 && (c.AdmitFloor != c.AdmitFloor || c.AdmitFloor < MinAcceptRate || c.AdmitFloor > c.AcceptRate):
			return bad("AdmitFloor", "%v must be between %g and {Server.AcceptRate} %v", c.AdmitFloor, MinAcceptRate, c.AcceptRate)
		}
	}
	if c.Shed > 0 {
		switch {
		case c.AcceptRate == 0:
			return bad("Shed", "needs {Server.AcceptRate} (the capacity above which it sheds)")
		case c.Shed < time.Second:
			return bad("Shed", "%v is below 1s: Retry-After carries whole seconds", c.Shed)
		}
	}
	return nil
}

// WithDefaults returns c with every zero field set to its default.
func (c Server) WithDefaults() Server {
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Backlog == 0 {
		c.Backlog = DefaultBacklog
	}
	def(&c.HandshakeTimeout, DefaultServerHandshakeTimeout)
	def(&c.RejectRetryAfter, DefaultRejectRetryAfter)
	def(&c.FrameTimeout, DefaultFrameTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.CloseTimeout, DefaultCloseTimeout)
	def(&c.LimitRetryAfter, DefaultLimitRetryAfter)
	if c.LimitStatus == 0 {
		c.LimitStatus = DefaultLimitStatus
	}
	if c.AdmitRamp > 0 && c.AdmitFloor == 0 {
		c.AdmitFloor = max(MinAcceptRate, c.AcceptRate/10)
	}
	if c.HTTPBurst == 0 {
		c.HTTPBurst = max(1, int(c.HTTPLimit/10))
	}
	if c.CertFile != "" || c.TLSCertKind != "" || c.TLSTicketKeys != "" {
		c.TLS = true
	}
	if c.TLS && c.CertFile == "" && c.TLSCertKind == "" {
		c.TLSCertKind = DefaultTLSCertKind
	}
	if c.TLS && c.TLSVersion == "" {
		c.TLSVersion = DefaultTLSVersion
	}
	if c.TLSTicketKeys != "" && c.TLSTicketRotate == 0 {
		c.TLSTicketRotate = DefaultTLSTicketRotate
	}
	if c.Workers == 0 {
		c.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if c.Upgraders == 0 {
		c.Upgraders = DefaultUpgraders
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	return c
}

// CheckAcceptRate says what is wrong with an accept rate, or "".
func CheckAcceptRate(r float64) string {
	switch {
	case r == 0:
		return ""
	case r != r || r < 0:
		return "must be a non-negative number"
	case r < MinAcceptRate:
		return fmt.Sprintf("is too small: 0 (unlimited) or at least %g per second", MinAcceptRate)
	case r > MaxAcceptRate:
		return fmt.Sprintf("is too large: at most %g per second", float64(MaxAcceptRate))
	}
	return ""
}

// ParseAddr parses a listen address, a literal IP and a port
// ("localhost" is 127.0.0.1), with a v4-mapped IPv6 address unmapped.
func ParseAddr(addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "localhost" {
		host = "127.0.0.1"
	}
	ap, perr := netip.ParseAddrPort(net.JoinHostPort(host, port))
	if err != nil || perr != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: want a literal IP and a port, like 127.0.0.1:0 or [::1]:8080", addr)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// AdmitRate is the accept rate of a process that began accepting since
// ago under an admission ramp (AdmitRamp): AdmitFloor rising linearly to
// AcceptRate over AdmitRamp, then AcceptRate. Without a ramp it is
// AcceptRate. c must have its defaults (WithDefaults).
func (c Server) AdmitRate(since time.Duration) float64 {
	if c.AdmitRamp <= 0 || c.AcceptRate <= 0 || since >= c.AdmitRamp {
		return c.AcceptRate
	}
	f := max(0, float64(since)/float64(c.AdmitRamp))
	return c.AdmitFloor + (c.AcceptRate-c.AdmitFloor)*f
}

// validSession checks Session: a protocol the bundled target serves, and
// not beside the message protocol.
func (c Server) validSession() error {
	switch {
	case c.Session != "" && c.Session != session.SocketIO && c.Session != session.MQTT && c.Session != session.ActionCable:
		return Errorf("Server.Session", "the bundled target serves the session protocols %s, %s and %s, not %q",
			session.SocketIO, session.MQTT, session.ActionCable, c.Session)
	case c.Session != "" && c.Store != "":
		return Errorf("Server.Session", "%s cannot run with {Server.Store} (the message protocol)", c.Session)
	}
	return nil
}
