// Package redisstore is the Redis Streams backend of package store
// (docs/protocol.md, "Stores"). Importing it registers the "redis" URL
// scheme with store.Register, so store.Open accepts
// redis://[user:pass@]host:port/db[?prefix=P] in that binary and only in
// that binary: the Redis driver stays out of the ones that do not need it.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-dev/stampede/store"
)

func init() {
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
// all with the room as hash tag so they share a cluster slot:
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
// survives any target restart.
type Store struct {
	c      *redis.Client
	prefix string
	opt    store.Options
}

// appendScript appends ARGV[4..] (id, body pairs) to the room.
// KEYS: seq counter, stream. ARGV: id key prefix, maxlen, ttl seconds,
// dedupe ("1" or "0"). Returns seq, dup (0/1) pairs.
var appendScript = redis.NewScript(`
local out = {}
for i = 5, #ARGV, 2 do
  local id, body = ARGV[i], ARGV[i+1]
  local idkey = ARGV[1] .. id
  local old = false
  if ARGV[4] == '1' then old = redis.call('GET', idkey) end
  if old then
    out[#out+1] = tonumber(old)
    out[#out+1] = 1
  else
    local seq = redis.call('INCR', KEYS[1])
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], seq .. '-0', 'id', id, 'body', body)
    if ARGV[4] == '1' then redis.call('SET', idkey, seq, 'EX', ARGV[3]) end
    out[#out+1] = seq
    out[#out+1] = 0
  end
end
return out
`)

// Open connects to the Redis server of u (redis://host:port/db, with an
// optional ?prefix= for every key, default "stampede:") and pings it.
func Open(ctx context.Context, u *url.URL, opt store.Options) (*Store, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	q := u.Query()
	prefix := q.Get("prefix")
	if prefix == "" {
		prefix = "stampede:"
	}
	q.Del("prefix")
	u2 := *u
	u2.RawQuery = q.Encode()
	ro, err := redis.ParseURL(u2.String())
	if err != nil {
		return nil, fmt.Errorf("store: redis URL: %w", err)
	}
	c := redis.NewClient(ro)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("store: redis %s: %w", u.Host, err)
	}
	return &Store{c: c, prefix: prefix, opt: opt}, nil
}

func (s *Store) key(room, kind string) string {
	return s.prefix + "{" + room + "}:" + kind
}

// Append implements store.Store with a batch of one.
func (s *Store) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	res, err := s.AppendBatch(ctx, room, []store.Entry{{ID: id, Body: body}})
	if err != nil {
		return 0, false, err
	}
	return res[0].Seq, res[0].Dup, nil
}

// AppendBatch implements store.Store with one script call.
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
	args := make([]any, 0, 4+2*len(entries))
	args = append(args, s.key(room, "id:"), s.opt.Retention, ttl, dedupe)
	for _, e := range entries {
		args = append(args, e.ID, e.Body)
	}
	v, err := appendScript.Run(ctx, s.c, []string{s.key(room, "seq"), s.key(room, "log")}, args...).Int64Slice()
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
