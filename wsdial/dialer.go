// Package wsdial is a blocking, single-connection WebSocket client: dial a
// ws:// or wss:// URL, get a *Conn or a classified *connerr.Error. Tests,
// drills against a user's wss:// server and small tools use it; the loadgen's
// tens of thousands of clients use their own epoll reactor, but both count
// failures through connerr, so their classes agree.
//
// An attempt runs in two timed phases, each with its own bound:
//
//	resolve + TCP connect        TLS + HTTP upgrade           established
//	|---- ConnectTimeout ----|--- HandshakeTimeout ---|-- Conn.Wait / ReadMessage --|
//	  dns refused timeout      tls handshake_4xx/5xx     closed_1001 closed_1006
//	  local                    handshake_timeout reset   protocol
package wsdial

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/connerr"
)

// Defaults for the zero values of Dialer's fields.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxRetryAfter    = 5 * time.Minute
	DefaultMaxMessageSize   = 1 << 20
)

// maxSynRetries is the kernel's bound on TCP_SYNCNT (MAX_TCP_SYNCNT).
const maxSynRetries = 127

// maxStatusHeader bounds how much of a non-101 answer is read for its
// headers (Retry-After).
const maxStatusHeader = 64 << 10

// Dialer opens one WebSocket connection per Dial. The zero value dials with
// the defaults; a Dialer may be used by several goroutines at once.
type Dialer struct {
	// ConnectTimeout bounds name resolution and the TCP connect together.
	// 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration `json:"connect_timeout,omitempty"`
	// HandshakeTimeout bounds the TLS handshake and the HTTP upgrade, from
	// the TCP connect until the 101 answer. 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration `json:"handshake_timeout,omitempty"`
	// SynRetries sets TCP_SYNCNT, the number of SYN retransmits before the
	// kernel fails the connect with ETIMEDOUT (on this kernel 1 gives about
	// 3 s, 2 about 7 s: FIELD-NOTES). 0 keeps the kernel's default (about
	// 135 s); at most 127.
	SynRetries int `json:"syn_retries,omitempty"`
	// LocalAddr is the source IP to connect from, bound with
	// IP_BIND_ADDRESS_NO_PORT so the port is chosen at connect time per
	// destination (several 127.x sources extend the ephemeral port range).
	// The zero Addr lets the kernel choose.
	LocalAddr netip.Addr `json:"local_addr,omitzero"`
	// TLSConfig configures wss:// connections. nil means the system roots;
	// an empty ServerName is set to the URL's host.
	TLSConfig *tls.Config `json:"-"`
	// Header holds extra upgrade request headers, such as an Authorization
	// token. The headers the WebSocket handshake owns (Host, Upgrade,
	// Connection, Sec-WebSocket-*) are rejected by Validate.
	Header http.Header `json:"header,omitempty"`
	// Protocols lists the subprotocols offered in Sec-WebSocket-Protocol, in
	// order of preference. A server that selects one not offered fails the
	// attempt as protocol.
	Protocols []string `json:"protocols,omitempty"`
	// MaxRetryAfter caps the Retry-After hint carried in a failed attempt's
	// connerr.Error. 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration `json:"max_retry_after,omitempty"`
	// MaxMessageSize bounds one received message in bytes; a larger one ends
	// the connection as protocol. 0 means DefaultMaxMessageSize.
	MaxMessageSize int64 `json:"max_message_size,omitempty"`
	// Now returns the current time, used to turn an HTTP-date Retry-After
	// into a wait. nil means time.Now. I/O deadlines always use real time.
	Now func() time.Time `json:"-"`
}

// reservedHeaders are the upgrade headers gobwas/ws writes itself.
var reservedHeaders = []string{
	"Host", "Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version",
	"Sec-Websocket-Protocol", "Sec-Websocket-Extensions",
}

// Validate reports the first field that holds an unusable value.
func (d *Dialer) Validate() error {
	switch {
	case d.ConnectTimeout < 0:
		return fmt.Errorf("wsdial: ConnectTimeout %v is negative", d.ConnectTimeout)
	case d.HandshakeTimeout < 0:
		return fmt.Errorf("wsdial: HandshakeTimeout %v is negative", d.HandshakeTimeout)
	case d.SynRetries < 0 || d.SynRetries > maxSynRetries:
		return fmt.Errorf("wsdial: SynRetries %d is outside 0..%d", d.SynRetries, maxSynRetries)
	case d.MaxRetryAfter < 0:
		return fmt.Errorf("wsdial: MaxRetryAfter %v is negative", d.MaxRetryAfter)
	case d.MaxMessageSize < 0:
		return fmt.Errorf("wsdial: MaxMessageSize %d is negative", d.MaxMessageSize)
	}
	for name := range d.Header {
		for _, r := range reservedHeaders {
			if strings.EqualFold(name, r) {
				return fmt.Errorf("wsdial: Header %q is set by the WebSocket handshake itself", name)
			}
		}
		if !validToken(name) {
			return fmt.Errorf("wsdial: Header name %q is not an HTTP token", name)
		}
		for _, v := range d.Header[name] {
			if strings.ContainsAny(v, "\r\n") {
				return fmt.Errorf("wsdial: Header %q has a line break in its value", name)
			}
		}
	}
	for _, p := range d.Protocols {
		if !validToken(p) {
			return fmt.Errorf("wsdial: Protocols entry %q is not an HTTP token", p)
		}
	}
	return nil
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Dial connects to rawURL (ws:// or wss://) and upgrades the connection.
// Every error is a *connerr.Error: an invalid Dialer or URL is class Local,
// then the class of the phase that failed (see connerr.ClassifyPhase). A
// 429 or 5xx answer carries its Retry-After in the error's RetryAfter.
// ctx bounds the whole attempt on top of the two timeouts.
func (d *Dialer) Dial(ctx context.Context, rawURL string) (*Conn, error) {
	if err := d.Validate(); err != nil {
		return nil, &connerr.Error{Class: connerr.Local, Err: err}
	}
	u, hostname, addr, err := parseURL(rawURL)
	if err != nil {
		return nil, &connerr.Error{Class: connerr.Local, Err: err}
	}
	nd := net.Dialer{Timeout: d.connectTimeout(), Control: d.control}
	if d.LocalAddr.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: d.LocalAddr.AsSlice(), Zone: d.LocalAddr.Zone()}
	}
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, connerr.Wrap(err, connerr.PhaseDial)
	}
	c, cerr := d.handshake(ctx, conn, u, hostname)
	if cerr != nil {
		conn.Close()
		return nil, cerr
	}
	return c, nil
}

// aLongTimeAgo is a deadline in the past: it interrupts blocked I/O at once.
var aLongTimeAgo = time.Unix(1, 0)

// handshake runs TLS (for wss) and the HTTP upgrade on a connected conn.
func (d *Dialer) handshake(ctx context.Context, conn net.Conn, u *url.URL, hostname string) (*Conn, *connerr.Error) {
	conn.SetDeadline(time.Now().Add(d.handshakeTimeout()))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })

	var (
		rw     = conn
		status statusCapture
		br     *bufio.Reader
		hs     ws.Handshake
		err    error
	)
	if u.Scheme == "wss" {
		tc := tls.Client(conn, d.tlsConfig(hostname))
		err = tc.Handshake()
		rw = tc
	}
	if err == nil {
		wd := ws.Dialer{Protocols: d.Protocols, OnStatusError: status.capture}
		if len(d.Header) > 0 {
			wd.Header = ws.HandshakeHeaderHTTP(d.Header)
		}
		br, hs, err = wd.Upgrade(rw, u)
	}
	if !stop() {
		// ctx ended during the handshake and poisoned the deadline: the
		// attempt failed even if the upgrade raced to success.
		if err == nil || isTimeout(err) {
			err = fmt.Errorf("%w: %w", ctx.Err(), cmpErr(err, errors.New("upgrade interrupted")))
		}
	}
	if err != nil {
		if br != nil {
			ws.PutReader(br)
		}
		e := connerr.Wrap(err, connerr.PhaseHandshake)
		if connerr.HonorsRetryAfter(e.Status) {
			if wait, ok := connerr.ParseRetryAfter(status.header.Get("Retry-After"), d.now(), d.maxRetryAfter()); ok {
				e.RetryAfter = wait
			}
		}
		return nil, e
	}
	conn.SetDeadline(time.Time{})
	c := newConn(rw, br, hs.Protocol, d.maxMessageSize())
	if tc, ok := rw.(*tls.Conn); ok {
		c.resumed = tc.ConnectionState().DidResume
	}
	return c, nil
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// isTimeout reports an I/O deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// statusCapture keeps the headers of a non-101 upgrade answer.
type statusCapture struct {
	header textproto.MIMEHeader
}

// capture is a ws.Dialer.OnStatusError hook: resp starts at the status line.
// A malformed or cut answer leaves whatever headers were read.
func (s *statusCapture) capture(_ int, _ []byte, resp io.Reader) {
	tp := textproto.NewReader(bufio.NewReader(io.LimitReader(resp, maxStatusHeader)))
	if _, err := tp.ReadLine(); err != nil {
		return
	}
	s.header, _ = tp.ReadMIMEHeader()
}

// parseURL checks a ws:// or wss:// URL and returns it with the TLS server
// name and the host:port to dial.
func parseURL(rawURL string) (u *url.URL, hostname, addr string, err error) {
	u, err = url.ParseRequestURI(rawURL)
	if err != nil {
		return nil, "", "", fmt.Errorf("wsdial: bad URL: %w", err)
	}
	port := ""
	switch u.Scheme {
	case "ws":
		port = "80"
	case "wss":
		port = "443"
	default:
		return nil, "", "", fmt.Errorf("wsdial: URL %q: scheme must be ws or wss", rawURL)
	}
	hostname = u.Hostname()
	if hostname == "" {
		return nil, "", "", fmt.Errorf("wsdial: URL %q has no host", rawURL)
	}
	if p := u.Port(); p != "" {
		port = p
	}
	return u, hostname, net.JoinHostPort(hostname, port), nil
}

func (d *Dialer) tlsConfig(hostname string) *tls.Config {
	cfg := d.TLSConfig
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName = hostname
	}
	return cfg
}

func (d *Dialer) connectTimeout() time.Duration {
	if d.ConnectTimeout > 0 {
		return d.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (d *Dialer) handshakeTimeout() time.Duration {
	if d.HandshakeTimeout > 0 {
		return d.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

func (d *Dialer) maxRetryAfter() time.Duration {
	if d.MaxRetryAfter > 0 {
		return d.MaxRetryAfter
	}
	return DefaultMaxRetryAfter
}

func (d *Dialer) maxMessageSize() int64 {
	if d.MaxMessageSize > 0 {
		return d.MaxMessageSize
	}
	return DefaultMaxMessageSize
}

func (d *Dialer) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
