package loadgen

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/backoff"
)

// maxAnswer bounds an upgrade answer's status line and headers.
const maxAnswer = 16 << 10

// upgrade writes upgrade requests and checks their answers. The request is
// a fixed prefix plus two per-attempt headers, so writing one copies bytes
// and encodes a key, nothing more.
type upgrade struct {
	prefix    []byte   // request line and fixed headers
	protocols []string // subprotocols offered
	seed      uint64
}

func newUpgrade(u *url.URL, header http.Header, protocols []string, seed uint64) *upgrade {
	host := u.Host
	if h := header.Get("Host"); h != "" {
		host = h
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n",
		u.RequestURI(), host)
	if len(protocols) > 0 {
		fmt.Fprintf(&b, "Sec-WebSocket-Protocol: %s\r\n", strings.Join(protocols, ", "))
	}
	keys := make([]string, 0, len(header))
	for k := range header {
		if http.CanonicalHeaderKey(k) != "Host" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // one request text for one Config
	for _, k := range keys {
		for _, v := range header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	return &upgrade{prefix: []byte(b.String()), protocols: protocols, seed: seed}
}

// key returns the Sec-WebSocket-Key of a client's socket number s: 16
// seeded random bytes, base64-encoded. It is recomputed, not stored, to
// check the answer.
func (g *upgrade) key(dst *[24]byte, id, s uint32) {
	var raw [16]byte
	n := uint64(s) << 32 // mask draws use the low bits (maskKey)
	binary.LittleEndian.PutUint64(raw[:8], backoff.Hash(g.seed, backoff.StreamKey, uint64(id), n))
	binary.LittleEndian.PutUint64(raw[8:], backoff.Hash(g.seed, backoff.StreamKey, uint64(id)|1<<32, n))
	base64.StdEncoding.Encode(dst[:], raw[:])
}

// maskKey returns the mask of frame k (k >= 1) on client id's socket s.
func (g *upgrade) maskKey(id, s, k uint32) [4]byte {
	var m [4]byte
	binary.LittleEndian.PutUint32(m[:], uint32(backoff.Hash(g.seed, backoff.StreamKey, uint64(id), uint64(s)<<32|uint64(k))))
	return m
}

// appendRequest appends client id's upgrade request for socket s to dst.
func (g *upgrade) appendRequest(dst []byte, id, s uint32) []byte {
	var key [24]byte
	g.key(&key, id, s)
	dst = append(dst, g.prefix...)
	dst = append(dst, "X-Stampede-Client: "...)
	dst = strconv.AppendUint(dst, uint64(id), 10)
	dst = append(dst, "\r\nSec-WebSocket-Key: "...)
	dst = append(dst, key[:]...)
	return append(dst, "\r\n\r\n"...)
}

// answer is a parsed upgrade answer.
type answer struct {
	status     int
	retryAfter []byte // the raw Retry-After value of a non-101 answer; aliases the input
}

// errAnswerTooLarge is a malformed answer whose headers never end.
var errAnswerTooLarge = fmt.Errorf("%w: upgrade answer headers exceed %d bytes", ws.ErrMalformedResponse, maxAnswer)

// headerEnd returns the length of the status line and headers in p, up to
// and including the blank line, or -1 while they are incomplete.
func headerEnd(p []byte) int {
	i := bytes.Index(p, []byte("\r\n\r\n"))
	if i < 0 {
		return -1
	}
	return i + 4
}

// parseAnswer checks a complete answer head (headerEnd bytes) to client
// id's socket s. A non-101 status is returned without an error; a 101 that
// breaks RFC 6455 4.1 returns a gobwas ws error, which connerr classifies as
// protocol.
func (g *upgrade) parseAnswer(head []byte, id, s uint32) (answer, error) {
	var a answer
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	// HTTP/1.1 101 Switching Protocols
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return a, fmt.Errorf("%w: status line %q", ws.ErrMalformedResponse, truncate(line))
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return a, fmt.Errorf("%w: status line %q", ws.ErrMalformedResponse, truncate(line))
		}
		a.status = a.status*10 + int(d-'0')
	}
	var upgradeOK, connectionOK, acceptOK bool
	var protocol []byte
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return a, fmt.Errorf("%w: header line %q", ws.ErrMalformedResponse, truncate(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case a.status != 101:
			if bytes.EqualFold(name, []byte("Retry-After")) {
				a.retryAfter = value
			}
		case bytes.EqualFold(name, []byte("Upgrade")):
			upgradeOK = hasToken(value, "websocket")
		case bytes.EqualFold(name, []byte("Connection")):
			connectionOK = hasToken(value, "upgrade")
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Accept")):
			acceptOK = g.acceptOK(value, id, s)
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Protocol")):
			protocol = value
		case bytes.EqualFold(name, []byte("Sec-WebSocket-Extensions")):
			if len(value) > 0 {
				return a, ws.ErrHandshakeBadExtensions // none were offered
			}
		}
	}
	if a.status != 101 {
		return a, nil
	}
	switch {
	case !upgradeOK:
		return a, ws.ErrHandshakeBadUpgrade
	case !connectionOK:
		return a, ws.ErrHandshakeBadConnection
	case !acceptOK:
		return a, ws.ErrHandshakeBadSecAccept
	case protocol != nil && !slices.Contains(g.protocols, string(protocol)):
		return a, ws.ErrHandshakeBadSubProtocol
	}
	return a, nil
}

// acceptOK checks Sec-WebSocket-Accept against the key sent.
func (g *upgrade) acceptOK(value []byte, id, s uint32) bool {
	const magic = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
	var in [24 + len(magic)]byte
	var key [24]byte
	g.key(&key, id, s)
	copy(in[copy(in[:], key[:]):], magic)
	sum := sha1.Sum(in[:])
	var want [28]byte
	base64.StdEncoding.Encode(want[:], sum[:])
	return bytes.Equal(value, want[:])
}

// hasToken reports whether a comma-separated header value holds token,
// compared case-insensitively.
func hasToken(value []byte, token string) bool {
	for len(value) > 0 {
		var t []byte
		t, value, _ = bytes.Cut(value, []byte(","))
		if bytes.EqualFold(bytes.TrimSpace(t), []byte(token)) {
			return true
		}
	}
	return false
}

// truncate keeps an error's quote of peer bytes short.
func truncate(p []byte) []byte {
	if len(p) > 64 {
		return p[:64]
	}
	return p
}

// errNoAnswer is an attempt the server ended before its upgrade answer.
var errNoAnswer = errors.New("connection closed before the upgrade answer")
