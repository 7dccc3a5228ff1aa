package spec

import (
	"errors"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/session"
)

// Defaults and bounds of a Client.
const (
	// DefaultMaxInflight bounds the first connects in flight (see
	// Client.MaxInflight).
	DefaultMaxInflight = 2000
	// DefaultConnectTimeout is the connect deadline of an attempt.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHandshakeTimeout is the wait for the 101 answer once TCP is up.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultPingInterval is how long a connected client hears nothing
	// from the server before it sends a keepalive ping.
	DefaultPingInterval = 10 * time.Second
	// MinPingInterval is the shortest keepalive interval: a ping is a
	// frame each way per client.
	MinPingInterval = 10 * time.Millisecond
	// PingOff, or any negative Client.PingInterval, turns the keepalive
	// off: the library and the command line (--ping-interval -1s) say it
	// alike, and zero means the default in both.
	PingOff = -1 * time.Nanosecond
	// MaxFleetPingRate is the most pings a second a fleet sends with the
	// default interval (Client.PingInterval).
	MaxFleetPingRate = 10000
	// DefaultMsgRate is the echo mode's messages per second per client.
	DefaultMsgRate = 1.0
	// MaxMsgRate bounds Client.MsgRate.
	MaxMsgRate = 1000
	// DefaultMsgSize is the echo mode's frame payload in bytes.
	DefaultMsgSize = 32
	// MinMsgSize is the smallest echo payload: it carries the send stamp
	// (the loadgen checks that its stamp fits).
	MinMsgSize = 26
	// MaxMsgSize is the largest echo payload: one frame fits a reactor's
	// write buffer.
	MaxMsgSize = 64 << 10
	// MaxProtocolBody is the largest stampede-mode body (MsgSize): the msg
	// frame around it must fit the protocol's largest frame, 64 KiB (the
	// loadgen checks it against protocol.MaxFrameSize).
	MaxProtocolBody = 64<<10 - 1024
	// DefaultRetryAfterCap is the longest a server's Retry-After may make a
	// client wait.
	DefaultRetryAfterCap = 60 * time.Second
	// MaxReactors bounds Client.Reactors.
	MaxReactors = 64
	// MaxSynRetries is the largest TCP_SYNCNT the kernel takes.
	MaxSynRetries = 127
	// DefaultRoomSize is the stampede mode's room size when Client.Rooms
	// is zero: client IDs 0-9 share a room, 10-19 the next, and so on.
	DefaultRoomSize = 10
	// DefaultQuietPeriod is how long before the run's end the stampede
	// mode stops sending, so deliveries in flight land before loss is
	// counted.
	DefaultQuietPeriod = 2 * time.Second
	// MinHistInterval is the shortest histogram interval: the results'
	// tick (results.Tick).
	MinHistInterval = 100 * time.Millisecond
)

// Message modes (Client.Mode).
const (
	// ModeNone connects, holds the connection and answers pings.
	ModeNone = "none"
	// ModeEcho sends a stamped text frame every 1/MsgRate seconds and
	// records the round trip of its echo.
	ModeEcho = "echo"
	// ModeStampede speaks the message protocol (package protocol): each
	// client joins its room, sends msg frames with its own IDs at MsgRate,
	// keeps un-ACKed ones in a retry queue, resumes after a reconnect, and
	// records what it received for the loss and duplicate count.
	ModeStampede = "stampede"
)

// Client is the spec of a fleet of WebSocket clients: what loadgen runs,
// storm spreads over agents and sim models. The zero value of every field
// but URL and Clients means its default. It serialises to JSON so a run's
// results record it and a plan carries it to an agent.
type Client struct {
	// URL is the server, ws://host:port/path or wss://... The host is
	// resolved once, when the fleet is created.
	URL string `json:"url"`
	// Clients is the number of clients in this fleet.
	Clients int `json:"clients"`
	// Ramp is the rate of first connects in clients per second: the
	// fleet's i-th client starts at its start + i/Ramp. Zero means all at
	// once, bounded by MaxInflight.
	Ramp float64 `json:"ramp"`
	// MaxInflight bounds the first connects in flight (connecting or
	// handshaking) so a fast ramp does not overflow a small backlog
	// pointlessly; zero means DefaultMaxInflight. It never delays a
	// reconnect: the herd after a disconnect is what a run measures.
	MaxInflight int `json:"max_inflight"`
	// MaxAttemptRate caps the reconnect attempts this fleet starts per
	// second, over all its clients; a retry due when the cap is reached
	// waits for the next free slot. Zero means no cap. It bounds what a
	// policy with short delays can do to a server (backoff.MinDelay is the
	// floor of each client's delay; this is the fleet's). First connects
	// are paced by Ramp and MaxInflight instead. ws:// clients only.
	MaxAttemptRate float64 `json:"max_attempt_rate,omitempty"`
	// Policy is the backoff policy every client shares.
	Policy backoff.Policy `json:"policy"`
	// Seed makes every random draw of the run reproducible.
	Seed uint64 `json:"seed"`
	// SourceIPs are local addresses to connect from, chosen round-robin by
	// client ID (IP_BIND_ADDRESS_NO_PORT is set, so each address has its
	// own ephemeral port range per destination). Empty means the kernel's
	// choice.
	SourceIPs []netip.Addr `json:"source_ips,omitempty"`
	// ConnectTimeout bounds the TCP connect; zero means
	// DefaultConnectTimeout. Failing it counts as class timeout.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// HandshakeTimeout bounds the wait from TCP connected to the 101
	// answer; zero means DefaultHandshakeTimeout. Failing it counts as
	// class handshake_timeout.
	HandshakeTimeout time.Duration `json:"handshake_timeout"`
	// PingInterval is how long a connected client may hear nothing from
	// the server before it sends a WebSocket ping (docs/metrics.md
	// "Keepalive"); zero means DefaultPingInterval, or longer for a fleet
	// above MaxFleetPingRate*DefaultPingInterval/1s clients so that it
	// sends at most MaxFleetPingRate pings a second (100 s at a million
	// clients); negative (PingOff) turns the keepalive off.
	PingInterval time.Duration `json:"ping_interval"`
	// PongTimeout is how long a client waits after its ping for any frame
	// from the server (the pong, or anything else) before it closes the
	// connection as dead, class ping_timeout; zero means PingInterval.
	PongTimeout time.Duration `json:"pong_timeout"`
	// SynRetries sets TCP_SYNCNT on each socket (1..MaxSynRetries),
	// bounding how long the kernel retransmits an unanswered SYN; zero
	// keeps the kernel's default (6: about 135 s on these machines).
	SynRetries int `json:"syn_retries"`
	// Header holds extra upgrade request headers (a token, for example). A
	// Host entry replaces the URL's host; the handshake's own headers may
	// not be set here.
	Header http.Header `json:"header,omitempty"`
	// Protocols are the subprotocols offered (Sec-WebSocket-Protocol).
	Protocols []string `json:"protocols,omitempty"`
	// Mode is the message mode: ModeNone (the default), ModeEcho or
	// ModeStampede.
	Mode string `json:"mode"`
	// MsgRate is the echo and stampede modes' messages per second per
	// connected client, at most MaxMsgRate; zero means DefaultMsgRate.
	MsgRate float64 `json:"msg_rate"`
	// MsgSize is the echo payload or stampede body in bytes, MinMsgSize..
	// MaxMsgSize (stampede: ..MaxProtocolBody); zero means DefaultMsgSize.
	MsgSize int `json:"msg_size"`
	// Rooms is the number of rooms of the whole fleet in stampede mode:
	// client ID i is a member of room i mod Rooms (2000 clients in 200
	// rooms: rooms of 10). Zero means rooms of DefaultRoomSize consecutive
	// IDs (room i / 10). Every process of a fleet must be given the same
	// value.
	Rooms int `json:"rooms,omitempty"`
	// QuietPeriod is how long before the run's end stampede clients stop
	// sending (new messages and resends), so that deliveries in flight land
	// before loss is counted: the run's drain. A client still behind its
	// room's last ACKed message at the end is counted unsynced, not as
	// having lost what is on its way (docs/metrics.md "Messages"); zero
	// means DefaultQuietPeriod. The run's end is the deadline of the
	// fleet's context; without one there is no quiet period.
	QuietPeriod time.Duration `json:"quiet_period,omitempty"`
	// NoResume switches resume off (stampede mode): after a reconnect a
	// client sends join ("from now") instead of resume, so the messages
	// sent while it was away are never delivered to it and count as lost.
	NoResume bool `json:"no_resume,omitempty"`
	// NoRetryQueue switches the retry queue off (stampede mode): messages
	// not ACKed when a connection ends are dropped instead of resent, and
	// counted as unacked_dropped.
	NoRetryQueue bool `json:"no_retry_queue,omitempty"`
	// Reactors is the number of epoll reactor goroutines, at most
	// MaxReactors; zero means min(GOMAXPROCS, 4).
	Reactors int `json:"reactors"`
	// TLSInsecure skips verifying the server's certificate on wss:// (a
	// self-signed target). Off, a rejected certificate stops the client
	// with class tls.
	TLSInsecure bool `json:"tls_insecure,omitempty"`
	// TLSCAFile is a PEM file of CA certificates that wss:// server
	// certificates are verified against instead of the system roots (a
	// staging CA). Empty means the system roots.
	TLSCAFile string `json:"tls_ca_file,omitempty"`
	// TLSCertFile and TLSKeyFile are a PEM client certificate and its key,
	// presented to a wss:// server that asks for one (mutual TLS). Both or
	// neither.
	TLSCertFile string `json:"tls_cert_file,omitempty"`
	// TLSKeyFile is the PEM private key of TLSCertFile.
	TLSKeyFile string `json:"tls_key_file,omitempty"`
	// TLSServerName is the name sent as SNI and checked against the
	// server's certificate; empty means the URL's host.
	TLSServerName string `json:"tls_server_name,omitempty"`
	// TLSNoResume turns each wss:// client's session cache off: every
	// handshake is full. On (the default), a client keeps the last session
	// the server gave it, as a browser does, and offers it at its next
	// handshake (a TLS 1.3 PSK or a TLS 1.2 ticket; never 0-RTT data).
	TLSNoResume bool `json:"tls_no_resume,omitempty"`
	// TLSGroups are the key exchange groups the wss:// clients offer, by
	// name (TLSGroupNames); empty means crypto/tls's default, the hybrid
	// post-quantum X25519MLKEM768 first, as current browsers offer. A
	// handshake in flight holds its post-quantum key (about 10 KB), which
	// a fleet offering only classical groups does not.
	TLSGroups []string `json:"tls_groups,omitempty"`
	// SecretHeaders names Header entries whose values are secret besides
	// the ones every fleet keeps secret (Authorization, Cookie,
	// Proxy-Authorization): Redacted shows them as <redacted>.
	SecretHeaders []string `json:"secret_headers,omitempty"`
	// RetryAfterCap is the longest wait a Retry-After hint may impose; zero
	// means DefaultRetryAfterCap.
	RetryAfterCap time.Duration `json:"retry_after_cap"`
	// NoRetryAfter makes clients ignore a server's Retry-After and wait
	// what the backoff policy says instead, as a client that does not
	// honour the header would (the target counts their early retries).
	NoRetryAfter bool `json:"no_retry_after,omitempty"`
	// HistInterval is the length of the latency histograms' intervals on
	// the run's time axis (the .hlog files' interval lines, the streamed
	// interval histograms: docs/results.md "Streamed results"), a whole
	// number of milliseconds from MinHistInterval; zero means the
	// results' default (1 s). Every process of a fleet must be given the
	// same value.
	HistInterval time.Duration `json:"hist_interval,omitempty"`
	// Session is the session protocol the clients speak over the
	// WebSocket (Socket.IO, graphql-ws, MQTT, ...: docs/protocols.md) and
	// its own messages; the zero value speaks none. A protocol adds its
	// subprotocol to Protocols, runs in ModeNone (on ws:// and wss://),
	// and makes a client up when its session is back.
	Session session.Config `json:"session,omitzero"`
}

// reservedHeaders are set by the handshake itself.
var reservedHeaders = []string{
	"Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version",
	"Sec-Websocket-Protocol", "Sec-Websocket-Extensions", "X-Stampede-Client",
}

// Validate reports the first field that makes the spec unusable as a
// *FieldError ("Client.MsgSize"). It reads the TLS files it names; it
// does not check the host's limits.
func (c Client) Validate() error {
	bad := func(field, format string, a ...any) error { return Errorf("Client."+field, format, a...) }
	u, err := CheckURL("Client.URL", c.URL, "ws", "wss")
	if err != nil {
		return err
	}
	if err := c.validateFleet(u.Scheme == "wss"); err != nil {
		return err
	}
	if c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSServerName != "" || len(c.TLSGroups) > 0 {
		if u.Scheme != "wss" {
			f := c.tlsField()
			if f == "TLSGroups" {
				return bad(f, "key exchange groups need a wss:// URL, got %s://", u.Scheme)
			}
			return bad(f, "a CA, client certificate or server name needs a wss:// URL, got %s://", u.Scheme)
		}
		if _, err := c.TLSConfig(); err != nil {
			return err
		}
	}
	host, err := netip.ParseAddr(u.Hostname())
	for i, ip := range c.SourceIPs {
		switch {
		case !ip.IsValid():
			return bad("SourceIPs", "address %d is not set", i)
		case err == nil && ip.Unmap().Is4() != host.Unmap().Is4():
			return bad("SourceIPs", "%s and the target %s are of different families", ip, host)
		}
	}
	return nil
}

// ValidateFleet checks every field but URL and what depends on its host:
// the spec of a fleet whose server is not known yet (a run's own target,
// a model). wss says whether the server will speak TLS.
func (c Client) ValidateFleet(wss bool) error { return c.validateFleet(wss) }

func (c Client) validateFleet(wss bool) error {
	bad := func(field, format string, a ...any) error { return Errorf("Client."+field, format, a...) }
	switch {
	case c.Clients <= 0:
		return bad("Clients", "must be at least 1, got %d", c.Clients)
	case c.Ramp < 0 || c.Ramp != c.Ramp:
		return bad("Ramp", "must be >= 0 clients/s, got %v", c.Ramp)
	case c.MaxInflight < 0:
		return bad("MaxInflight", "must be >= 0, got %d", c.MaxInflight)
	case c.MaxAttemptRate < 0 || c.MaxAttemptRate != c.MaxAttemptRate || c.MaxAttemptRate > 1e9:
		return bad("MaxAttemptRate", "must be within 0..1e9 attempts/s, got %v", c.MaxAttemptRate)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout", "must be >= 0, got %s", c.ConnectTimeout)
	case c.HandshakeTimeout < 0:
		return bad("HandshakeTimeout", "must be >= 0, got %s", c.HandshakeTimeout)
	case c.PingInterval > 0 && c.PingInterval < MinPingInterval:
		return bad("PingInterval", "must be 0 (the default), negative (off) or at least %s, got %s", MinPingInterval, c.PingInterval)
	case c.PongTimeout < 0:
		return bad("PongTimeout", "must be >= 0, got %s", c.PongTimeout)
	case c.SynRetries < 0 || c.SynRetries > MaxSynRetries:
		return bad("SynRetries", "must be within 0..%d, got %d", MaxSynRetries, c.SynRetries)
	}
	if err := c.validateMessages(wss); err != nil {
		return err
	}
	switch {
	case c.Reactors < 0 || c.Reactors > MaxReactors:
		return bad("Reactors", "must be within 0..%d, got %d", MaxReactors, c.Reactors)
	case c.RetryAfterCap < 0:
		return bad("RetryAfterCap", "must be >= 0, got %s", c.RetryAfterCap)
	case c.HistInterval != 0 && (c.HistInterval < MinHistInterval || c.HistInterval%time.Millisecond != 0):
		return bad("HistInterval", "must be a whole number of milliseconds from %s, got %s", MinHistInterval, c.HistInterval)
	}
	if err := c.Policy.Validate(); err != nil {
		return Wrap("Client.Policy", err)
	}
	if err := c.validateSession(); err != nil {
		return err
	}
	if proto := c.Policy.Protocol(); proto != "" && proto != c.Session.Protocol {
		// The library reconnects only when the session protocol's pings
		// stop: its clients must speak that protocol.
		return Errorf("Client.Policy", "%s reconnects when the %s session protocol's pings stop: the clients must speak it (Session.Protocol %s)", c.Policy, proto, proto)
	}
	return c.validateHeaders()
}

// validateMessages checks the fields of the fleet's messages: the mode,
// rooms, rates and sizes, and what each mode takes.
func (c Client) validateMessages(wss bool) error {
	bad := func(field, format string, a ...any) error { return Errorf("Client."+field, format, a...) }
	switch {
	case c.Mode != "" && c.Mode != ModeNone && c.Mode != ModeEcho && c.Mode != ModeStampede:
		return bad("Mode", "must be %q, %q or %q, got %q", ModeNone, ModeEcho, ModeStampede, c.Mode)
	case c.Mode == ModeStampede && wss:
		return bad("Mode", "%q runs on ws:// only (wss:// clients do not speak the message protocol yet)", ModeStampede)
	case c.Mode == ModeStampede && c.MsgSize > MaxProtocolBody:
		return bad("MsgSize", "must be within %d..%d bytes in %q mode, got %d", MinMsgSize, MaxProtocolBody, ModeStampede, c.MsgSize)
	case c.Rooms < 0:
		return bad("Rooms", "must be >= 0, got %d", c.Rooms)
	case c.Mode != ModeStampede && c.Rooms > 0:
		return bad("Rooms", "only for mode %q, not %q", ModeStampede, c.Mode)
	case c.Mode != ModeStampede && c.NoResume:
		return bad("NoResume", "only for mode %q, not %q", ModeStampede, c.Mode)
	case c.Mode != ModeStampede && c.NoRetryQueue:
		return bad("NoRetryQueue", "only for mode %q, not %q", ModeStampede, c.Mode)
	case c.QuietPeriod < 0:
		return bad("QuietPeriod", "must be >= 0, got %s", c.QuietPeriod)
	case c.MsgRate < 0 || c.MsgRate != c.MsgRate || c.MsgRate > MaxMsgRate:
		return bad("MsgRate", "must be within 0..%d messages/s, got %v", MaxMsgRate, c.MsgRate)
	case c.MsgSize != 0 && (c.MsgSize < MinMsgSize || c.MsgSize > MaxMsgSize):
		return bad("MsgSize", "must be within %d..%d bytes, got %d", MinMsgSize, MaxMsgSize, c.MsgSize)
	}
	return nil
}

// validateHeaders checks the handshake's headers, the secret ones and the
// subprotocols.
func (c Client) validateHeaders() error {
	bad := func(field, format string, a ...any) error { return Errorf("Client."+field, format, a...) }
	for k, vs := range c.Header {
		ck := http.CanonicalHeaderKey(k)
		for _, r := range reservedHeaders {
			if ck == r {
				return bad("Header", "%s is set by the handshake itself (use Protocols for subprotocols)", ck)
			}
		}
		if !validHeaderName(k) {
			return bad("Header", "invalid header name %q", k)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return bad("Header", "value of %s contains a line break", ck)
			}
		}
	}
	if err := CheckSecretHeaders("Client.SecretHeaders", "Client.Header", c.SecretHeaders); err != nil {
		return err
	}
	for _, p := range c.Protocols {
		if p == "" || !validHeaderName(p) {
			return bad("Protocols", "invalid subprotocol %q", p)
		}
	}
	return nil
}

// validateSession checks the session protocol and its sections.
func (c Client) validateSession() error {
	if err := c.Session.Validate(); err != nil {
		var fe *session.FieldError
		if errors.As(err, &fe) {
			return Errorf("Client.Session."+fe.Field, "%s", fe.Msg)
		}
		return Wrap("Client.Session", err)
	}
	p := c.Session.Protocol
	switch {
	case p == "":
		return nil
	case c.Mode != "" && c.Mode != ModeNone:
		return Errorf("Client.Session.Protocol", "%s speaks its own messages: it cannot run with mode %q", p, c.Mode)
	}
	return nil
}

// tlsField names the first TLS field set, the one a TLS error points at.
func (c Client) tlsField() string {
	switch {
	case c.TLSCAFile != "":
		return "TLSCAFile"
	case c.TLSCertFile != "":
		return "TLSCertFile"
	case c.TLSKeyFile != "":
		return "TLSKeyFile"
	case c.TLSServerName != "":
		return "TLSServerName"
	}
	return "TLSGroups"
}

// validHeaderName reports whether s is an HTTP token.
// CheckSecretHeaders refuses a name in names (field) that is not a header
// name: a value given as "Authorization: Bearer x" would name no header
// the fleet sends, so the header would go unsent and nothing be redacted.
// The error shows only what comes before the colon or space, never the
// value after it, and points at header (the field that sends one).
func CheckSecretHeaders(field, header string, names []string) error {
	for _, n := range names {
		if validHeaderName(n) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSpace(n), ":")
		if f := strings.Fields(name); len(f) > 0 {
			name = f[0]
		}
		if name == "" || !validHeaderName(name) {
			name = "Name"
		}
		return Errorf(field, "%q is a header and its value; it takes a header name only (to send the header: {%s} '%s: value')", name+": ...", header, name)
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b <= ' ' || b >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, b) >= 0 {
			return false
		}
	}
	return true
}

// WithDefaults returns c with every zero field set to its default.
func (c Client) WithDefaults() Client {
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.PingInterval == 0 {
		c.PingInterval = fleetPingInterval(c.Clients)
	}
	if c.PongTimeout == 0 && c.PingInterval > 0 {
		c.PongTimeout = c.PingInterval
	}
	if c.Mode == "" {
		c.Mode = ModeNone
	}
	if c.MsgRate == 0 {
		c.MsgRate = DefaultMsgRate
	}
	if c.MsgSize == 0 {
		c.MsgSize = DefaultMsgSize
	}
	if c.Reactors == 0 {
		c.Reactors = min(runtime.GOMAXPROCS(0), 4)
	}
	c.Reactors = max(1, min(c.Reactors, c.Clients))
	if c.RetryAfterCap == 0 {
		c.RetryAfterCap = DefaultRetryAfterCap
	}
	if c.QuietPeriod == 0 {
		c.QuietPeriod = DefaultQuietPeriod
	}
	return c
}

// Redacted returns the spec with its secrets hidden, for anything that is
// written or printed: the values of secret headers (Authorization,
// Cookie, Proxy-Authorization and SecretHeaders) and the URL's user info
// appear as redact.Mark.
func (c Client) Redacted() Client {
	c.URL = redact.URLWith(c.URL, c.SecretHeaders)
	c.Header = redact.Header(c.Header, c.SecretHeaders)
	c.Session = c.Session.Redacted()
	return c
}

// RoomOf is the room of client id in stampede mode (Client.Rooms): id
// mod rooms, or, when rooms is zero, rooms of DefaultRoomSize consecutive
// IDs (room id / DefaultRoomSize).
func RoomOf(rooms int, id uint32) uint32 {
	if rooms > 0 {
		return id % uint32(rooms)
	}
	return id / DefaultRoomSize
}

// fleetPingInterval is the default ping interval of a fleet of n clients:
// DefaultPingInterval, or longer, in whole seconds, so that the fleet
// sends at most MaxFleetPingRate pings a second (100 s at a million
// clients). Each ping and pong is a packet both kernels look up in a hash
// of every socket: at a million connections on one 2-core machine, pings
// every 10 s held the first connects to about 2,000 a second (445,000
// connected after 100 s); without them the fleet connected in 70 s.
func fleetPingInterval(n int) time.Duration {
	d := time.Duration(float64(n) / MaxFleetPingRate * float64(time.Second)).Round(time.Second)
	return max(DefaultPingInterval, d)
}
