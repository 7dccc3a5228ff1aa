// Package hub carries the agent protocol (package agent, docs/agent.md)
// between hosts over NATS: a coordinator's Hub, with an embedded NATS
// server or an existing one, that agents on other hosts Join with the
// run's token; each joined agent is a Member whose channels are
// agent.Transports, one per role placed on it.
//
//	agent                                   coordinator (Hub)
//	  │ ── hello (name, role, capacity) ──>  │ stampede.join, HMAC(token)
//	  │ <─ challenge (nonce) ─────────────   │ HMAC(token): the coordinator has it too
//	  │ ── auth ─────────────────────────>   │ HMAC(session key): the agent has it
//	  │ <─ welcome ───────────────────────   │
//	  │ ── clock (t0) ───────────────────>   │ several round trips,
//	  │ <─ clock (t0, coordinator's now) ─   │ the shortest one kept
//	  │ ── offset (offset, bound) ───────>   │ the agent has joined
//	  │ <─ msg (channel k: plan, ...) ────   │ agent messages, both ways
//	  │ <─> beat every 500 ms ───────────    │ silence for 3 s: the peer is gone
//	  │ <─ bye ───────────────────────────   │ the run is over
//
// Every message after the hello is authenticated with HMAC-SHA256 over its
// subject, its sequence number and its body, keyed by the run's signing key
// (the join) or a key derived from it and both sides' nonces (the session):
// a stranger on the same NATS server can neither join a run, nor steer an
// agent, nor forge or replay a result. Sequence numbers are consecutive in
// each direction, so a message NATS dropped (a slow consumer) is detected,
// never silently missing from a merge. Bodies are not encrypted: use TLS
// to the server, and the server's own accounts to keep others from
// reading a run's subjects.
//
// The token itself never leaves the host: the signing key and the
// credential presented to the NATS server are each derived from it with
// HKDF-SHA256 under their own label, so what the server (or anyone who
// reads a CONNECT sent in clear) sees reveals neither the token nor the
// signing key.
package hub

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/stampede-dev/stampede/spec"
)

// Version is the version of the hub's own protocol (the hello, the session
// and its channels), which every hello carries: a peer of another is
// refused at once. The agent protocol the channels carry has its own
// (agent.Version), which the agent and the coordinator check.
const Version = 1

// JoinSubject is where agents say hello.
const JoinSubject = "stampede.join"

// Timing of a session. An agent or coordinator that hears nothing from its
// peer for LossTimeout treats it as gone: a coordinator marks the agent
// lost, an agent stops its load.
const (
	BeatInterval = 500 * time.Millisecond
	LossTimeout  = 3 * time.Second
	// OfflineTimeout is how long an agent's connection to the NATS server
	// may stay down before it stops its load: the embedded server lives in
	// the coordinator's process, so its connection breaking is the first
	// sign that the coordinator is gone.
	OfflineTimeout = time.Second
	// ClockRounds is how many round trips an agent makes to estimate its
	// clock offset; the one with the shortest round trip is kept.
	ClockRounds = 8
)

// Header names of a hub message.
const (
	hKind = "Stampede-Kind"
	hSeq  = "Stampede-Seq"
	hCh   = "Stampede-Ch"
	hMAC  = "Stampede-Mac"
)

// Kinds of hub messages (the Stampede-Kind header).
const (
	kHello     = "hello"
	kChallenge = "challenge"
	kRefused   = "refused"
	kAuth      = "auth"
	kWelcome   = "welcome"
	kClock     = "clock"
	kOffset    = "offset"
	kBeat      = "beat"
	kMsg       = "msg"
	kEOF       = "eof"
	kBye       = "bye"
)

// ReadToken reads a run's token from path: its first line, trimmed. The
// file must be one only its reader controls: owned by this user with no
// permission for group or others (as WriteToken leaves it), or owned by
// root and writable by root alone, readable by its group at most (a
// Kubernetes Secret volume with an fsGroup). Anything else, such as a
// 0666 file someone left where the token is expected, is refused.
func ReadToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%w", err)
	}
	if err := trustedTokenFile(fi, os.Getuid()); err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%s: mode %04o, %v", path, fi.Mode().Perm(), err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%w", err)
	}
	t := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if len(t) < 16 {
		return nil, spec.Errorf("Hub.TokenFile", "%s: a token of at least 16 characters is needed, found %d", path, len(t))
	}
	return []byte(t), nil
}

// trustedTokenFile says why a token file whose owner and mode fi gives
// cannot be trusted by user uid, or nil.
func trustedTokenFile(fi os.FileInfo, uid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("its owner is unknown")
	}
	perm := fi.Mode().Perm()
	switch {
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case int(st.Uid) == uid && perm&0o077 == 0:
		return nil
	case st.Uid == 0 && perm&0o027 == 0:
		return nil // root's, read-only to its group: a Secret volume
	case int(st.Uid) != uid && st.Uid != 0:
		return fmt.Errorf("owned by uid %d, not by this user (uid %d): the token must be this user's own", st.Uid, uid)
	}
	return errors.New("group or others may read or write it: chmod 600 it (or remove it for a new token)")
}

// WriteToken writes a new random token (32 bytes, hex) to path with mode
// 0600 and returns it. An existing file is replaced.
func WriteToken(path string) ([]byte, error) {
	t := []byte(randomHex(32))
	_ = os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%w", err)
	}
	_, err = f.Write(append(append([]byte(nil), t...), '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, spec.Errorf("Hub.TokenFile", "%w", err)
	}
	return t, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// Labels (HKDF info) of the keys derived from a run's token. A new label
// gives unrelated keys: change the version when a key's use changes.
const (
	natsLabel = "stampede nats credential v1"
	signLabel = "stampede message signing key v1"
)

// runKeys are the keys a run's token yields.
type runKeys struct {
	// nats is the credential presented to the NATS server (hex): the
	// embedded server's authorization token, an agent's CONNECT token.
	nats string
	// sign keys the MACs of the join messages and the session keys.
	sign []byte
}

// deriveKeys derives a run's keys from its token.
func deriveKeys(token []byte) runKeys {
	derive := func(label string) []byte {
		k, err := hkdf.Key(sha256.New, token, nil, label, 32)
		if err != nil {
			panic(err) // only for a length beyond 255 hash sizes
		}
		return k
	}
	return runKeys{nats: hex.EncodeToString(derive(natsLabel)), sign: derive(signLabel)}
}

// maxPrintable bounds, in characters, the text from the wire that is
// printed.
const maxPrintable = 300

// Printable returns text that came off the wire (a refusal, an agent's
// name) fit to print on a terminal or in a log: control characters, which
// include the escape that starts an ANSI sequence, are dropped, and text
// beyond maxPrintable characters is cut to "...".
func Printable(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) {
			continue
		}
		if n == maxPrintable {
			b.WriteString("...")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// sign returns the MAC of one message.
func sign(key []byte, subject string, seq uint64, kind string, ch int, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%d\n%s\n%d\n", subject, seq, kind, ch)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// newMsg returns a signed hub message (key nil: unsigned).
func newMsg(key []byte, subject string, seq uint64, kind string, ch int, body []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = body
	m.Header.Set(hKind, kind)
	m.Header.Set(hSeq, strconv.FormatUint(seq, 10))
	if ch != 0 {
		m.Header.Set(hCh, strconv.Itoa(ch))
	}
	if key != nil {
		m.Header.Set(hMAC, sign(key, subject, seq, kind, ch, body))
	}
	return m
}

// parsed is a received hub message.
type parsed struct {
	kind string
	seq  uint64
	ch   int
	body []byte
}

// errBadMAC is a message that key did not sign.
var errBadMAC = errors.New("hub: message not signed with the run's key")

// verify parses m and checks its MAC with key.
func verify(key []byte, m *nats.Msg) (parsed, error) {
	p := parsed{kind: m.Header.Get(hKind), body: m.Data}
	var err error
	if p.seq, err = strconv.ParseUint(m.Header.Get(hSeq), 10, 64); err != nil {
		return p, fmt.Errorf("hub: message without a sequence number")
	}
	if c := m.Header.Get(hCh); c != "" {
		if p.ch, err = strconv.Atoi(c); err != nil {
			return p, fmt.Errorf("hub: bad channel %q", c)
		}
	}
	want := sign(key, m.Subject, p.seq, p.kind, p.ch, p.body)
	if !hmac.Equal([]byte(want), []byte(m.Header.Get(hMAC))) {
		return p, errBadMAC
	}
	return p, nil
}

// sessionKey derives a session's key from the run's signing key and both
// nonces.
func sessionKey(signKey []byte, sid, nonceA, nonceC string) []byte {
	m := hmac.New(sha256.New, signKey)
	fmt.Fprintf(m, "stampede session\n%s\n%s\n%s", sid, nonceA, nonceC)
	return m.Sum(nil)
}

// Subjects of a session: up is agent -> coordinator, down the other way.
func upSubject(sid string) string   { return "stampede.s." + sid + ".up" }
func downSubject(sid string) string { return "stampede.s." + sid + ".down" }

// validSID says whether s can be a session ID (hex, 16..64 characters), so
// a hello cannot make the coordinator publish to any subject it names.
func validSID(s string) bool {
	if len(s) < 16 || len(s) > 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// hello is what an agent says first.
type hello struct {
	V        int    `json:"v"`
	SID      string `json:"sid"`
	Nonce    string `json:"nonce"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	Capacity int    `json:"capacity,omitempty"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	// Addr is the agent's address as its NATS connection shows it: where
	// a target or proxy placed on it listens.
	Addr string `json:"addr,omitempty"`
	// SourceIPs are the addresses its loadgen shares' clients connect
	// from (empty: the kernel's choice).
	SourceIPs []netip.Addr `json:"source_ips,omitempty"`
	// EphemeralPorts is the size of the agent host's ephemeral port range
	// (net.ipv4.ip_local_port_range): how many clients one of its source
	// addresses carries towards one destination (0: not known).
	EphemeralPorts int `json:"ephemeral_ports,omitempty"`
}

// challenge answers a hello whose token matches.
type challenge struct {
	Nonce string `json:"nonce"`
	RunID string `json:"run_id,omitempty"`
}

// clockMsg is one round trip of the clock estimate.
type clockMsg struct {
	T0 time.Time `json:"t0"`
	TC time.Time `json:"tc,omitzero"`
}

// offsetMsg is the agent's clock estimate: Offset is the coordinator's
// clock minus the agent's, within Bound (half the best round trip).
type offsetMsg struct {
	Offset time.Duration `json:"offset"`
	Bound  time.Duration `json:"bound"`
	RTT    time.Duration `json:"rtt"`
}
