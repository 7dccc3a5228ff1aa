// Package store keeps the messages of the message protocol (docs/protocol.md)
// so that they outlive target restarts: a per-room sequence assigned by the
// store, dedupe by the client's message ID, replay after a seq, and a
// retention bound per room. Three backends share one interface and one
// conformance test (package storetest):
//
//	file:///dir or dir        embedded append-only log with group commit (the default), here
//	redis://host:port/db      Redis Streams, one stream per room (package redisstore)
//	postgres://user@host/db   PostgreSQL, one message table (package pgstore)
//
// Open picks the backend from the URL's scheme. The embedded store is
// always there; a networked backend is linked only into a binary that
// imports its package, which registers its schemes (Register), the way a
// database/sql driver does:
//
//	import _ "github.com/stampede-dev/stampede/store/redisstore"
//
// That keeps the Redis and PostgreSQL drivers, and the memory they cost,
// out of processes that never open them, such as every loadgen process of a
// run (cmd/stampede-worker).
package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
)

// Defaults applied to zero Options fields.
const (
	// DefaultRetention is how many messages per room a store keeps.
	DefaultRetention = 10_000
	// DefaultDedupeTTL is how long Redis remembers a message ID.
	DefaultDedupeTTL = 7 * 24 * time.Hour
)

// Store holds the messages of rooms. Its methods are safe for concurrent
// use. Seqs start at 1 in each room and grow by one per stored message.
type Store interface {
	// Append stores one message of room under the client's id and returns
	// its seq. If (room, id) was stored before it returns the original seq
	// and dup true, and stores nothing. When it returns without error the
	// message is durable (the meaning of an ACK).
	Append(ctx context.Context, room, id string, body []byte) (seq uint64, dup bool, err error)
	// AppendBatch is Append for several messages of one room, in order,
	// in one round trip or commit. results[i] answers entries[i]; a later
	// entry repeating an earlier one's ID is a dup of it.
	AppendBatch(ctx context.Context, room string, entries []Entry) (results []Result, err error)
	// Since returns the kept messages of room with seq > afterSeq, oldest
	// first, at most limit of them (limit <= 0: all). through is the seq
	// the answer covers up to: the last message returned when limit cut
	// the answer short, else the room's latest seq. gap reports that
	// messages after afterSeq are gone (retention): the seqs from
	// afterSeq+1 up to the first message returned (or through, when none
	// is) are lost.
	Since(ctx context.Context, room string, afterSeq uint64, limit int) (msgs []Message, through uint64, gap bool, err error)
	// Head returns the latest seq of room, 0 for a room with no message.
	Head(ctx context.Context, room string) (uint64, error)
	// Close releases the store. Appends in flight finish or fail first.
	Close() error
}

// Entry is one message to append.
type Entry struct {
	// ID is the client-generated message ID, the dedupe key within a room.
	ID string
	// Body is the message text.
	Body []byte
}

// Result is the outcome of one Entry.
type Result struct {
	// Seq is the message's seq in its room (the original one for a dup).
	Seq uint64
	// Dup reports that the ID had been stored before: nothing was stored.
	Dup bool
}

// Message is one stored message.
type Message struct {
	// Seq is its seq in its room.
	Seq uint64
	// ID is the client's message ID.
	ID string
	// Body is the message text. Callers must not modify it.
	Body []byte
}

// Options configure a Store. The zero value means every default.
type Options struct {
	// Retention is how many messages per room are kept for Since; older
	// ones may be dropped. Default DefaultRetention.
	Retention int
	// NoDedupe stores every Append as a new message, even with an ID seen
	// before: what dedupe prevents, made visible (`--no-dedupe`).
	NoDedupe bool
	// DedupeTTL is how long the Redis backend remembers an ID. Default
	// DefaultDedupeTTL. The embedded store remembers IDs for ever, the
	// PostgreSQL one as long as the message is retained.
	DedupeTTL time.Duration
}

// Validate reports a negative field.
func (o Options) Validate() error {
	if o.Retention < 0 {
		return fmt.Errorf("store: retention %d must not be negative", o.Retention)
	}
	if o.DedupeTTL < 0 {
		return fmt.Errorf("store: dedupe TTL %v must not be negative", o.DedupeTTL)
	}
	return nil
}

// WithDefaults returns o with each zero field set to its default. Open
// applies it before calling a backend; a backend's own constructor applies
// it too, for callers that bypass Open.
func (o Options) WithDefaults() Options {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.DedupeTTL == 0 {
		o.DedupeTTL = DefaultDedupeTTL
	}
	return o
}

// ErrClosed is returned by a Store's methods after Close.
var ErrClosed = errors.New("store: closed")

// ErrDamaged is wrapped by Open's error for an embedded file log with a
// damaged record that valid records follow: truncating there would drop
// them, so the store refuses to open instead.
var ErrDamaged = errors.New("store: damaged record followed by valid ones")

// ErrLocked is returned by Open when another process holds the embedded
// store's directory.
var ErrLocked = errors.New("store: directory is in use by another process")

// Open opens the store named by rawURL:
//
//   - file:///abs/dir, or a plain path: the embedded store in that
//     directory (created if missing);
//   - redis://[user:pass@]host:port/db[?prefix=P&cluster=1&wait-aof=1]:
//     Redis (package redisstore); every key starts with P (default
//     "stampede:"); cluster=1 for a Redis Cluster, wait-aof=1 for ACKs
//     after the AOF's fsync (docs/protocol.md, "What an ACK means");
//   - postgres://user@host:port/db[?table=T&...] (or postgresql://):
//     PostgreSQL (package pgstore); messages go in table T (default
//     "stampede_messages") and T_rooms; the other query parameters go to
//     the driver.
//
// A scheme other than file is opened by the backend registered for it
// (Register). A redis or postgres URL in a binary built without that
// backend fails with an error wrapping ErrBackendNotLinked.
func Open(ctx context.Context, rawURL string, opt Options) (Store, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	open, u, err := resolve(rawURL)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return OpenFile(rawURL, opt)
	}
	st, err := open(ctx, u, opt)
	return st, scrub(err, rawURL)
}

// resolve parses a store URL and finds its backend; a plain path (no
// "://") returns a nil URL. Its errors never quote a password.
func resolve(rawURL string) (OpenFunc, *url.URL, error) {
	if rawURL == "" {
		return nil, nil, errors.New("store: empty URL")
	}
	if !strings.Contains(rawURL, "://") {
		return nil, nil, checkPath(rawURL)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, badURL(rawURL, err)
	}
	open, err := backend(u)
	if err != nil {
		return nil, nil, err
	}
	return open, u, nil
}

// keyValue is the start of a libpq connection string: "host=h
// password=pw dbname=d".
var keyValue = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)

// checkPath refuses a store string that is neither a URL nor a path: a
// libpq key=value string, which would otherwise name a folder (made with
// its password in its name), or one with a control character. The error
// never quotes it.
func checkPath(raw string) error {
	switch {
	case keyValue.MatchString(raw):
		return errors.New("store: a key=value connection string is not taken: write a URL, postgres://HOST:5432/DB with USER:PASSWORD@ before the host")
	case strings.ContainsFunc(raw, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return errors.New("store: not a URL nor a path: it holds a control character")
	}
	return nil
}

// shown is u as an error quotes it: without its user info (user name
// and password) nor its secret query parameters (redact.URL); Mark whole
// when an '@' is elsewhere (in "#://u:pw@" it is the fragment), where no
// parser tells what it hides.
func shown(u *url.URL) string {
	if u.User == nil && strings.Contains(u.String(), "@") {
		return redact.Mark
	}
	return redact.URL(u.String())
}

// badURL is the error of a store URL that does not parse: the URL
// redacted (whole, if it may hold user info), and the parser's reason
// only when the URL holds no '@': url.Parse quotes the part it refused,
// which may be a password ("invalid port \":pw\" after host").
func badURL(raw string, err error) error {
	if strings.Contains(raw, "@") {
		return fmt.Errorf("store: bad URL %q", redact.URL(raw))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // url.Error quotes the whole URL
	}
	return fmt.Errorf("store: bad URL %q: %w", redact.URL(raw), err)
}

// scrubbedError is a backend's error with the secrets of its store URL
// (user name, password, secret query values) cut out of its text: a
// driver's error may quote them ("user=postgres").
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub returns err with the secrets of rawURL cut out of its text.
func scrub(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	msg := redact.Policy{Values: redact.Values(nil, nil, rawURL)}.Text(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg, err}
}

// openFileURL opens the embedded store of a file:///abs/dir URL.
func openFileURL(_ context.Context, u *url.URL, opt Options) (Store, error) {
	dir, err := fileURLPath(u)
	if err != nil {
		return nil, err
	}
	return OpenFile(dir, opt)
}

// fileURLPath is the folder of a file:///abs/dir URL.
func fileURLPath(u *url.URL) (string, error) {
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("store: file URL %q: host must be empty (file:///path)", shown(u))
	}
	if u.Path == "" {
		return "", fmt.Errorf("store: file URL %q has no path", shown(u))
	}
	return u.Path, nil
}

// AppendOne implements Append on top of AppendBatch: a backend's Append is
// a batch of one.
func AppendOne(ctx context.Context, s Store, room, id string, body []byte) (uint64, bool, error) {
	res, err := s.AppendBatch(ctx, room, []Entry{{ID: id, Body: body}})
	if err != nil {
		return 0, false, err
	}
	return res[0].Seq, res[0].Dup, nil
}
