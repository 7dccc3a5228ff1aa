// Package redisstore is the Redis Streams backend of package store
// (docs/protocol.md, "Stores"). Importing it registers the "redis" URL
// scheme with store.Register, so store.Open accepts
// redis://[user:pass@]host:port/db[?prefix=P&cluster=1&wait-aof=1] in that
// binary and only in that binary: the Redis driver stays out of the ones
// that do not need it. What an ACK means under each persistence setting is
// in docs/protocol.md, "Stores".
package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-dev/stampede/store"
)

func init() {
	// go-redis logs what it also returns (a refused dial, a failed AUTH)
	// on stderr, where it would reach the terminal around stampede's own
	// one-line error; every error reaches the caller, so the log is off.
	redis.SetLogger(quiet{})
	store.Register("redis", func(ctx context.Context, u *url.URL, opt store.Options) (store.Store, error) {
		s, err := Open(ctx, u, opt)
		if err != nil {
			return nil, err // not a typed nil in a non-nil interface
		}
		return s, nil
	})
}

var _ store.Store = (*Store)(nil)

// Store is the Redis Streams backend. Each room has three kinds of keys,
// all with the room as hash tag so they share a cluster slot (hashTag):
//
//	P{room}:seq       INCR counter: the room's latest seq
//	P{room}:log       stream of the room's messages; entry ID "<seq>-0",
//	                  fields id and body; XADD MAXLEN ~ Retention
//	P{room}:id:<id>   the seq of message <id> (dedupe), EX DedupeTTL
//
// The seq is the counter, not the stream's own IDs, so it is dense (1, 2,
// 3...) and independent of the clock; writing it as the entry ID makes a
// replay one XRANGE. An append is one Lua script per batch (check the ID
// key, INCR, XADD, SET), atomic on the server, so the ID -> seq mapping
// survives any target restart. The script is given every key it touches in
// KEYS, as Redis Cluster requires, and they share the room's slot.
type Store struct {
	c       redis.UniversalClient
	cluster *redis.ClusterClient // c, with cluster=1; else nil
	prefix  string
	opt     store.Options
	waitAOF bool // WAITAOF after each append, before the ACK
}

// WaitAOFTimeout bounds how long an append with wait-aof=1 waits for the
// local fsync of the AOF; past it the append fails and nothing is ACKed.
const WaitAOFTimeout = 5 * time.Second

// appendScript appends ARGV[4..] (id, body pairs) to the room; it
// builds no key name itself.
// KEYS: seq counter, stream, then the dedupe key of each entry in order.
// ARGV: maxlen, ttl seconds, dedupe ("1" or "0"). Returns seq, dup (0/1)
// pairs.
var appendScript = redis.NewScript(`
local out = {}
local k = 3
local last = 0
for i = 6, #ARGV, 2 do
  local id, body = ARGV[i], ARGV[i+1]
  k = k + 1
  local idkey = KEYS[k]
  local old = false
  if ARGV[3] == '1' then old = redis.call('GET', idkey) end
  if old then
    -- A write, which changes nothing, so that the WAITAOF after this
    -- script waits for the AOF to be fsynced past the first copy too:
    -- its writer may have died before its own WAITAOF.
    redis.call('SET', idkey, old, 'KEEPTTL')
    out[#out+1] = tonumber(old)
    out[#out+1] = 1
  else
    local seq = redis.call('INCR', KEYS[1])
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], seq .. '-0', 'id', id, 'body', body)
    if ARGV[3] == '1' then redis.call('SET', idkey, seq, 'EX', ARGV[2]) end
    out[#out+1] = seq
    out[#out+1] = 0
    last = seq
  end
end
if last > 0 and ARGV[4] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'r', ARGV[5], 's', last)
end
return out
`)

// Open connects to the Redis server of u and pings it. The URL is
// redis://[user:pass@]host:port/db with these options:
//
//	prefix=P    every key begins with P; default "stampede:"
//	cluster=1   u is one node of a Redis Cluster (database 0 only); more
//	            seed nodes may follow as &addr=host:port
//	keep=1      read by the run (store.ForRun), not here
//	wait-aof=1  every append waits for WAITAOF 1 0 (the local AOF fsynced,
//	            Redis 7.2 or later, appendonly yes) before it returns, so
//	            an ACK survives a crash of the Redis host
//
// Other query parameters go to go-redis (e.g. dial_timeout=3s).
func Open(ctx context.Context, u *url.URL, opt store.Options) (*Store, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	q := u.Query()
	s := &Store{prefix: q.Get("prefix"), opt: opt}
	if s.prefix == "" {
		s.prefix = "stampede:"
	}
	cluster, err := flag(q, "cluster")
	if err != nil {
		return nil, err
	}
	if s.waitAOF, err = flag(q, "wait-aof"); err != nil {
		return nil, err
	}
	for _, k := range []string{"prefix", "cluster", "wait-aof", "keep"} {
		q.Del(k)
	}
	u2 := *u
	u2.RawQuery = q.Encode()
	if cluster {
		if p := strings.Trim(u2.Path, "/"); p != "" && p != "0" {
			return nil, fmt.Errorf("store: redis URL: a cluster has only database 0, not %q", p)
		}
		u2.Path = ""
		co, err := redis.ParseClusterURL(u2.String())
		if err != nil {
			return nil, fmt.Errorf("store: redis URL: %w", err)
		}
		s.cluster = redis.NewClusterClient(co)
		s.c = s.cluster
	} else {
		ro, err := redis.ParseURL(u2.String())
		if err != nil {
			return nil, fmt.Errorf("store: redis URL: %w", err)
		}
		s.c = redis.NewClient(ro)
	}
	if err := s.c.Ping(ctx).Err(); err != nil {
		s.c.Close()
		return nil, fmt.Errorf("store: redis %s: %w", u.Host, err)
	}
	if err := s.checkAuth(ctx, u); err != nil {
		s.c.Close()
		return nil, err
	}
	if s.waitAOF {
		if err := s.eachMaster(ctx, checkAOF); err != nil {
			s.c.Close()
			return nil, err
		}
	}
	return s, nil
}

// checkAuth sends the URL's password again with AUTH: go-redis lets a
// password pass that a server without one refuses (its HELLO fails, the
// AUTH it falls back to fails, and a later step of the handshake clears
// the error), and a password the server does not expect is a mistake
// worth telling, such as the wrong server.
func (s *Store) checkAuth(ctx context.Context, u *url.URL) error {
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return nil
	}
	args := []any{"auth", pw}
	if name := u.User.Username(); name != "" {
		args = []any{"auth", name, pw}
	}
	return s.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if err := c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("store: redis %s: AUTH: %s", c.Options().Addr, strings.ReplaceAll(err.Error(), pw, "xxxxx"))
		}
		return nil
	})
}

// flag reads a 0/1 URL option.
func flag(q url.Values, name string) (bool, error) {
	switch q.Get(name) {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	}
	return false, fmt.Errorf("store: redis URL: %s=%q: want 1 or 0", name, q.Get(name))
}

// eachMaster runs f on the server, or on every master of a cluster.
func (s *Store) eachMaster(ctx context.Context, f func(context.Context, *redis.Client) error) error {
	if s.cluster != nil {
		return s.cluster.ForEachMaster(ctx, f)
	}
	return f(ctx, s.c.(*redis.Client))
}

// checkAOF tells why WAITAOF cannot work on c, before a first append would
// fail: a Redis older than 7.2, or AOF off.
func checkAOF(ctx context.Context, c *redis.Client) error {
	addr := c.Options().Addr
	// INFO may be renamed away on a managed Redis; WAITAOF then speaks.
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		if v, ok := versionOf(info); ok && !atLeast(v, 7, 2) {
			return fmt.Errorf("store: redis %s: wait-aof=1 needs WAITAOF, Redis 7.2 or later; this server runs Redis %s (drop wait-aof: ACKs are then as durable as appendfsync makes them, docs/protocol.md)", addr, v)
		}
	}
	if v, err := c.ConfigGet(ctx, "appendonly").Result(); err == nil && v["appendonly"] == "no" {
		return fmt.Errorf("store: redis %s: wait-aof=1 needs the append-only file, but appendonly is no (CONFIG SET appendonly yes, or drop wait-aof)", addr)
	}
	// A connection without writes returns at once when AOF is on.
	err := c.WaitAOF(ctx, 1, 0, time.Second).Err()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		return fmt.Errorf("store: redis %s: wait-aof=1 needs WAITAOF, Redis 7.2 or later: %w", addr, err)
	}
	if err != nil {
		return fmt.Errorf("store: redis %s: wait-aof=1: WAITAOF: %w", addr, err)
	}
	return nil
}

// versionOf is the redis_version line of an INFO server answer.
func versionOf(info string) (string, bool) {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			return v, true
		}
	}
	return "", false
}

// atLeast reports whether version v ("7.0.15") is major.minor or later;
// a version it cannot read counts as later (WAITAOF then answers).
func atLeast(v string, major, minor int) bool {
	f := strings.SplitN(v, ".", 3)
	if len(f) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

func (s *Store) key(room, kind string) string {
	return s.prefix + "{" + hashTag(room) + "}:" + kind
}

// hashTag is room as the hash tag of its keys. Redis hashes the text
// between the first "{" and the next "}", and the whole key when that is
// empty, so a room that is empty, holds a brace or begins with "=" is
// written "=" and its hex digits: its keys still share one slot, and no
// other room's tag is the same.
func hashTag(room string) string {
	if room != "" && !strings.ContainsAny(room, "{}") && !strings.HasPrefix(room, "=") {
		return room
	}
	return "=" + hex.EncodeToString([]byte(room))
}

// Append implements store.Store with a batch of one.
func (s *Store) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	return store.AppendOne(ctx, s, room, id, body)
}

// AppendBatch implements store.Store with one script call (and, with
// wait-aof=1, a WAITAOF on the same connection).
func (s *Store) AppendBatch(ctx context.Context, room string, entries []store.Entry) ([]store.Result, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	dedupe := "1"
	if s.opt.NoDedupe {
		dedupe = "0"
	}
	ttl := int64(s.opt.DedupeTTL.Seconds())
	if ttl < 1 {
		ttl = 1
	}
	keys := make([]string, 0, 3+len(entries))
	args := make([]any, 0, 5+2*len(entries))
	if s.cluster != nil {
		// No feed: a key outside the room's slot would break the
		// script; KEYS[3] is then a placeholder in the slot.
		keys = append(keys, s.key(room, "seq"), s.key(room, "log"), s.key(room, "seq"))
		args = append(args, s.opt.Retention, ttl, dedupe, "", room)
	} else {
		keys = append(keys, s.key(room, "seq"), s.key(room, "log"), s.feedKey())
		args = append(args, s.opt.Retention, ttl, dedupe, FeedMaxLen, room)
	}
	for _, e := range entries {
		keys = append(keys, s.key(room, "id:"+e.ID))
		args = append(args, e.ID, e.Body)
	}
	var v []int64
	var err error
	if s.waitAOF {
		v, err = s.appendDurable(ctx, keys, args)
	} else {
		v, err = appendScript.Run(ctx, s.c, keys, args...).Int64Slice()
	}
	if err != nil {
		return nil, fmt.Errorf("store: redis append: %w", err)
	}
	if len(v) != 2*len(entries) {
		return nil, fmt.Errorf("store: redis append: %d results for %d entries", len(v)/2, len(entries))
	}
	res := make([]store.Result, len(entries))
	for i := range res {
		res[i] = store.Result{Seq: uint64(v[2*i]), Dup: v[2*i+1] == 1}
	}
	return res, nil
}

// appendDurable runs the script and WAITAOF 1 0 in one pipeline, which is
// one connection to the room's master: WAITAOF waits for the writes of its
// own connection. It fails unless the local AOF has them fsynced.
func (s *Store) appendDurable(ctx context.Context, keys []string, args []any) ([]int64, error) {
	node, ok := s.c.(*redis.Client)
	if s.cluster != nil {
		var err error
		if node, err = s.cluster.MasterForKey(ctx, keys[0]); err != nil {
			return nil, err
		}
	} else if !ok {
		return nil, errors.New("not a Redis client")
	}
	run := func(eval func(redis.Pipeliner) *redis.Cmd) ([]int64, error) {
		var script *redis.Cmd
		var wait *redis.Cmd
		node.Pipelined(ctx, func(p redis.Pipeliner) error {
			script = eval(p)
			wait = p.Do(ctx, "WAITAOF", 1, 0, WaitAOFTimeout.Milliseconds())
			return nil
		})
		v, err := script.Int64Slice()
		if err != nil {
			return nil, err
		}
		n, err := wait.Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("WAITAOF: %w", err)
		}
		if len(n) == 0 || n[0] < 1 {
			return nil, fmt.Errorf("WAITAOF: not fsynced to the append-only file within %s", WaitAOFTimeout)
		}
		return v, nil
	}
	v, err := run(func(p redis.Pipeliner) *redis.Cmd { return appendScript.EvalSha(ctx, p, keys, args...) })
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The first append on this server: send the script's text.
		v, err = run(func(p redis.Pipeliner) *redis.Cmd { return appendScript.Eval(ctx, p, keys, args...) })
	}
	return v, err
}

// Since implements store.Store: GET the head, then XRANGE up to it (a message
// appended in between is beyond the answer's through, not lost from it).
func (s *Store) Since(ctx context.Context, room string, afterSeq uint64, limit int) ([]store.Message, uint64, bool, error) {
	head, err := s.Head(ctx, room)
	if err != nil || afterSeq >= head {
		return nil, head, false, err
	}
	start, end := strconv.FormatUint(afterSeq+1, 10)+"-0", strconv.FormatUint(head, 10)+"-0"
	var xs []redis.XMessage
	if limit > 0 {
		xs, err = s.c.XRangeN(ctx, s.key(room, "log"), start, end, int64(limit)).Result()
	} else {
		xs, err = s.c.XRange(ctx, s.key(room, "log"), start, end).Result()
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: redis since: %w", err)
	}
	msgs := make([]store.Message, 0, len(xs))
	for _, x := range xs {
		m, err := parseEntry(x)
		if err != nil {
			return nil, 0, false, err
		}
		msgs = append(msgs, m)
	}
	through := head
	if limit > 0 && len(msgs) == limit {
		through = msgs[len(msgs)-1].Seq
	}
	gap := len(msgs) == 0 || msgs[0].Seq > afterSeq+1
	return msgs, through, gap, nil
}

func parseEntry(x redis.XMessage) (store.Message, error) {
	seqStr, _, _ := strings.Cut(x.ID, "-")
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	id, ok1 := x.Values["id"].(string)
	body, ok2 := x.Values["body"].(string)
	if err != nil || !ok1 || !ok2 {
		return store.Message{}, fmt.Errorf("store: redis: malformed stream entry %q", x.ID)
	}
	return store.Message{Seq: seq, ID: id, Body: []byte(body)}, nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, room string) (uint64, error) {
	v, err := s.c.Get(ctx, s.key(room, "seq")).Uint64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: redis head: %w", err)
	}
	return v, nil
}

// Close implements store.Store.
func (s *Store) Close() error { return s.c.Close() }

// quiet is go-redis's logger: it prints nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// dropBatch is how many keys one SCAN step asks for and one pipeline of
// UNLINKs removes.
const dropBatch = 1000

// Drop implements store.Dropper: it removes every key under the store's
// prefix (SCAN MATCH prefix*, UNLINK in batches), on every master of a
// cluster. Each UNLINK names one key, so no command spans two slots.
func (s *Store) Drop(ctx context.Context) error {
	match := globEscape(s.prefix) + "*"
	return s.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, dropBatch).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys {
						p.Unlink(ctx, k)
					}
					return nil
				}); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
}

// globEscape quotes the glob characters of s for a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FeedMaxLen is about how many entries the feed stream keeps (XADD
// MAXLEN ~): one per appended batch, naming the room and its new head.
// A follower that falls further behind than that rereads every room.
const FeedMaxLen = 1_000_000

// feedBlock is how long one XREAD of the feed blocks.
const feedBlock = 5 * time.Second

var _ store.Feed = (*Store)(nil)

// feedKey is the feed stream: every batch's append script adds an entry
// {r: room, s: head} to it in the same script, so an entry exists exactly
// when its messages do.
func (s *Store) feedKey() string { return s.prefix + "feed" }

// Shared reports whether several target processes can share the store:
// a standalone Redis has one feed stream; a cluster has none.
func (s *Store) Shared() bool { return s.cluster == nil }

// Follow implements store.Feed: it reads the feed stream with XREAD BLOCK
// from its last entry on, and calls fn for each. On a Redis error it
// waits a moment, reads on from where it was, and calls fn(Update{}).
// A follower more than FeedMaxLen entries behind misses the trimmed ones:
// their rooms catch up at their next update, or at a resume.
func (s *Store) Follow(ctx context.Context, fn func(store.Update)) error {
	if s.cluster != nil {
		return errors.New("store: redis cluster has no feed")
	}
	// A client of its own, closed when ctx ends: that ends a blocked
	// XREAD at once (a cancelled context alone does not).
	opt := *s.c.(*redis.Client).Options()
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 1, 0, 1
	c := redis.NewClient(&opt)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer func() {
		if stop() {
			c.Close()
		}
	}()
	last := "0-0"
	xs, err := c.XRevRangeN(ctx, s.feedKey(), "+", "-", 1).Result()
	if err != nil {
		return fmt.Errorf("store: redis feed: %w", err)
	}
	if len(xs) == 1 {
		last = xs[0].ID
	}
	// Rooms may have members already (this runs beside the server):
	// what was stored before the read position was taken is read by a
	// recheck, from each room's head.
	fn(store.Update{})
	broken := false
	for ctx.Err() == nil {
		res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{s.feedKey(), last}, Count: 1000, Block: feedBlock}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			broken = true
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			continue
		}
		if broken {
			broken = false
			fn(store.Update{})
		}
		for _, st := range res {
			for _, x := range st.Messages {
				last = x.ID
				room, _ := x.Values["r"].(string)
				seqStr, _ := x.Values["s"].(string)
				seq, err := strconv.ParseUint(seqStr, 10, 64)
				if err != nil {
					fn(store.Update{})
					continue
				}
				fn(store.Update{Room: room, Seq: seq})
			}
		}
	}
	return ctx.Err()
}
