// Package jsstore is the message store on NATS JetStream (docs/jetstream.md):
// the embedded default that the target processes of a group share. The
// group's owner runs a NATS server with JetStream in its own process
// (StartServer: file storage in the run's folder, every write fsynced
// before it is acknowledged); each target process connects to it.
//
//	jetstream:///abs/dir           the embedded server on that directory: a
//	                               target group's owner starts it (Host) and
//	                               hands its processes a nats:// URL with
//	                               the server's credential (in their plan);
//	                               a single process opening it runs it itself
//	nats://127.0.0.1:PORT[?stream=S]  a JetStream server already running
//
// One stream holds every room, two subjects per message (room and id are
// hex in subjects):
//
//	<p>.m.<room>.<seq>   the message: header Stampede-Id, payload the body,
//	                     published with expected-last-subject-sequence 0,
//	                     so each seq of a room is stored once, whichever
//	                     process wins; Head is the last of <p>.m.<room>.*
//	<p>.d.<room>.<id>    the dedupe marker (payload: the seq it claims),
//	                     written before the message and replaced only by
//	                     compare-and-set; a claim left without its message
//	                     is completed by whoever finds it
//
// so seqs stay dense and an ID is stored once across every process
// (appendOne). Follow consumes the message subjects, headers only.
package jsstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/store"
)

func init() {
	open := func(ctx context.Context, u *url.URL, opt store.Options) (store.Store, error) {
		s, err := Open(ctx, u, opt)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	store.Register("nats", open)
	store.Register("jetstream", open)
	store.RegisterHost("jetstream", host)
}

// DefaultStream is the stream's name unless ?stream= names another.
const DefaultStream = "STAMPEDE"

// maxRetries bounds the attempts of one AppendBatch that keeps losing
// races to other processes.
const maxRetries = 1000

var _ store.Store = (*Store)(nil)
var _ store.Feed = (*Store)(nil)

// Store is the JetStream message store.
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	pfx    string // subject prefix, "stampede.<stream>"
	opt    store.Options
	srv    *Server // the embedded server this Store runs itself, or nil
	// sync: ask the embedded server's owner to fsync (SyncSubject) after
	// each append, before returning (sync=1, or a jetstream:/// URL).
	sync bool

	mu    sync.Mutex
	heads map[string]uint64 // last head seen per room (a hint: retried on conflict)
	locks map[string]*roomLock
}

// roomLock serialises this process's appends to one room: they would
// only lose races to each other. Other processes' appends still race, and
// the loser retries.
type roomLock struct {
	sync.Mutex
	users int
}

func (s *Store) lockRoom(room string) func() {
	s.mu.Lock()
	l := s.locks[room]
	if l == nil {
		l = &roomLock{}
		s.locks[room] = l
	}
	l.users++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, room)
		}
		s.mu.Unlock()
	}
}

// Open connects to the JetStream server of u and creates the stream if
// missing. A jetstream:///dir URL starts the embedded server on dir in
// this process first (one process: a group shares it through Host).
func Open(ctx context.Context, u *url.URL, opt store.Options) (*Store, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	q := u.Query()
	syncOn := false
	switch q.Get("sync") {
	case "", "0", "false":
	case "1", "true":
		syncOn = true
	default:
		return nil, fmt.Errorf("store: jetstream URL: sync=%q: want 1 or 0", q.Get("sync"))
	}
	stream := q.Get("stream")
	if stream == "" {
		stream = DefaultStream
	}
	if !validName(stream) {
		return nil, fmt.Errorf("store: jetstream stream %q: want letters, digits, - and _", stream)
	}
	var srv *Server
	addr := u.Host
	switch u.Scheme {
	case "jetstream":
		if u.Path == "" || u.Host != "" {
			return nil, fmt.Errorf("store: jetstream URL %q: want jetstream:///abs/dir", redact.URL(u.String()))
		}
		var err error
		if srv, err = StartServer(u.Path); err != nil {
			return nil, err
		}
		su, _ := url.Parse(srv.URL())
		addr, u = su.Host, su
		syncOn = true
	case "nats":
		if addr == "" {
			return nil, fmt.Errorf("store: nats URL %q names no host:port", redact.URL(u.String()))
		}
	}
	nu := url.URL{Scheme: "nats", Host: addr, User: u.User}
	nc, err := nats.Connect(nu.String(), nats.Name("stampede-store"), nats.MaxReconnects(-1),
		nats.ReconnectWait(200*time.Millisecond), nats.Timeout(5*time.Second))
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return nil, fmt.Errorf("store: jetstream %s: %w", addr, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:              stream,
			Subjects:          []string{"stampede." + stream + ".>"},
			Storage:           jetstream.FileStorage,
			Retention:         jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1,
			Discard:           jetstream.DiscardOld,
			AllowDirect:       true,
			Duplicates:        time.Second,
		})
	}
	if err != nil {
		nc.Close()
		if srv != nil {
			srv.Close()
		}
		return nil, fmt.Errorf("store: jetstream stream %s: %w", stream, err)
	}
	return &Store{nc: nc, js: js, stream: stream, pfx: "stampede." + stream, opt: opt, srv: srv, sync: syncOn, heads: map[string]uint64{}, locks: map[string]*roomLock{}}, nil
}

func validName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != "" && len(s) <= 64
}

// host starts the embedded server of a jetstream:///dir URL for a target
// group and returns the nats:// URL its processes open.
func host(ctx context.Context, u *url.URL) (string, func() error, error) {
	if u.Path == "" || u.Host != "" {
		return "", nil, fmt.Errorf("store: jetstream URL %q: want jetstream:///abs/dir", redact.URL(u.String()))
	}
	srv, err := StartServer(u.Path)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("sync", "1")
	shared, err := url.Parse(srv.URL()) // with the credential
	if err != nil {
		srv.Close()
		return "", nil, err
	}
	shared.RawQuery = q.Encode()
	return shared.String(), srv.Close, nil
}

func (s *Store) subj(kind, room string) string {
	return s.pfx + "." + kind + "." + hex.EncodeToString([]byte(room))
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	return store.AppendOne(ctx, s, room, id, body)
}

// AppendBatch implements store.Store: the entries in order, each with
// appendOne, then one sync for all of them.
func (s *Store) AppendBatch(ctx context.Context, room string, entries []store.Entry) ([]store.Result, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	defer s.lockRoom(room)()
	res := make([]store.Result, len(entries))
	for i, e := range entries {
		r, err := s.appendOne(ctx, room, e)
		if err != nil {
			return nil, fmt.Errorf("store: jetstream append: %w", err)
		}
		res[i] = r
	}
	if s.sync {
		// Stored and written to the block file; durable once the
		// owner's group commit has fsynced it. A batch of dups syncs
		// too: the first copy's writer may have died before its sync,
		// leaving the message in the page cache only.
		rctx, cancel := context.WithTimeout(ctx, syncTimeout)
		r, err := s.nc.RequestWithContext(rctx, SyncSubject, nil)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("store: jetstream sync: %w", err)
		}
		if string(r.Data) != "+OK" {
			return nil, fmt.Errorf("store: jetstream sync: %s", r.Data)
		}
	}
	return res, nil
}

// appendOne stores one entry, retrying the races it loses. The message
// subject m.<room>.<seq> takes each seq once (expected-last-subject-
// sequence 0); the marker d.<room>.<id> claims a seq for an ID, written
// first and replaced only by compare-and-set. A claim whose message is
// missing is completed by whoever finds it (the claimant or a resend on
// another process): both publish the same ID under the same seq, one
// wins, the other finds it stored and answers dup. So an ID is stored
// once, whichever processes its copies reach, even if a process dies
// between the claim and the message.
func (s *Store) appendOne(ctx context.Context, room string, e store.Entry) (store.Result, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := backOff(ctx, room, attempt); err != nil {
				return store.Result{}, err
			}
		}
		var res store.Result
		var done bool
		var err error
		if s.opt.NoDedupe {
			res, done, err = s.appendUnchecked(ctx, room, e, attempt == 0)
		} else {
			res, done, err = s.appendDeduped(ctx, room, e, attempt)
		}
		if err != nil || done {
			return res, err
		}
	}
}

// backOff waits before the attempt-th try of an append that lost a race:
// another process appends to the room too, so each waits a little, more
// after each loss, and one of them gets through. It gives up after
// maxRetries.
func backOff(ctx context.Context, room string, attempt int) error {
	if attempt >= maxRetries {
		return fmt.Errorf("lost %d races for room %q", attempt, room)
	}
	select {
	case <-time.After(time.Duration(rand.Int64N(int64(100*time.Microsecond) * int64(min(attempt, 50))))):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appendUnchecked is one try of an append without deduplication: the
// message at the head's next seq. done is false when another append took
// that seq first.
func (s *Store) appendUnchecked(ctx context.Context, room string, e store.Entry, cachedHead bool) (res store.Result, done bool, err error) {
	head, err := s.head(ctx, room, cachedHead)
	if err != nil {
		return store.Result{}, true, err
	}
	ok, err := s.publishMsg(ctx, room, head+1, e)
	if err != nil || !ok {
		return store.Result{}, err != nil, err
	}
	return store.Result{Seq: head + 1}, true, nil
}

// appendDeduped is one try of an append deduplicated by ID: it finds the
// ID's claim, if any, and completes it, or claims the head's next seq and
// stores the message there. done is false when another process won a
// race and the append must look again.
func (s *Store) appendDeduped(ctx context.Context, room string, e store.Entry, attempt int) (res store.Result, done bool, err error) {
	marker := s.subj("d", room) + "." + hex.EncodeToString([]byte(e.ID))
	var claimSeq uint64 // stream sequence of the marker, 0: none
	ms, err := s.direct(ctx, map[string]any{"last_by_subj": marker})
	if err != nil {
		return store.Result{}, true, err
	}
	if len(ms) == 1 {
		claimSeq, _ = strconv.ParseUint(ms[0].Header.Get(jetstream.SequenceHeader), 10, 64)
		seq, err := strconv.ParseUint(string(ms[0].Data), 10, 64)
		if err != nil {
			return store.Result{}, true, fmt.Errorf("bad dedupe marker %q", ms[0].Data)
		}
		res, done, stale, err := s.completeClaim(ctx, room, seq, e)
		if err != nil || !stale {
			return res, done || err != nil, err
		}
		// A stale claim: claim a new seq below.
	}
	head, err := s.head(ctx, room, attempt > 0)
	if err != nil {
		return store.Result{}, true, err
	}
	seq := head + 1
	d := nats.NewMsg(marker)
	d.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(claimSeq, 10))
	d.Data = strconv.AppendUint(nil, seq, 10)
	if ok, _, err := s.publish(ctx, d); err != nil || !ok {
		return store.Result{}, err != nil, err // !ok: another copy of this ID claimed first
	}
	ok, err := s.publishMsg(ctx, room, seq, e)
	if err != nil || !ok {
		return store.Result{}, err != nil, err
	}
	return store.Result{Seq: seq}, true, nil
}

// completeClaim answers an ID whose claim on seq exists: dup when its
// message is stored; when the head is seq-1 (the claim is in flight, or its
// process died) it stores the message there itself. stale is a claim
// whose seq holds another message: the caller claims anew.
func (s *Store) completeClaim(ctx context.Context, room string, seq uint64, e store.Entry) (res store.Result, done, stale bool, err error) {
	st, err := s.claimState(ctx, room, seq, e.ID)
	if err != nil {
		return store.Result{}, true, false, err
	}
	switch st {
	case claimStored:
		return store.Result{Seq: seq, Dup: true}, true, false, nil
	case claimOpen:
		ok, err := s.publishMsg(ctx, room, seq, e)
		if err != nil || !ok {
			return store.Result{}, err != nil, false, err // !ok: someone stored seq first: look again
		}
		return store.Result{Seq: seq}, true, false, nil
	}
	return store.Result{}, false, true, nil
}

type claimResult int

const (
	claimStored claimResult = iota // message seq is this ID: a dup
	claimOpen                      // seq is the room's next: not stored yet
	claimStale                     // seq holds another message: claim again
)

// claimState tells what became of a marker's claim of seq for id. Seqs
// are dense, so a message missing below the head was stored and dropped
// by retention since (its marker outlived it): a dup.
func (s *Store) claimState(ctx context.Context, room string, seq uint64, id string) (claimResult, error) {
	subj := s.subj("m", room) + "." + strconv.FormatUint(seq, 10)
	for range 2 {
		m, err := s.direct(ctx, map[string]any{"last_by_subj": subj})
		if err != nil {
			return 0, err
		}
		if len(m) == 1 {
			if m[0].Header.Get("Stampede-Id") == id {
				return claimStored, nil
			}
			return claimStale, nil
		}
		head, err := s.head(ctx, room, true)
		if err != nil {
			return 0, err
		}
		if head < seq {
			return claimOpen, nil
		}
		// Stored since the first look (by its claimant, or another
		// message took the seq), or dropped by retention: look again.
	}
	return claimStored, nil
}

// publishMsg stores e as message seq of room unless that seq is taken
// (ok false).
func (s *Store) publishMsg(ctx context.Context, room string, seq uint64, e store.Entry) (bool, error) {
	m := nats.NewMsg(s.subj("m", room) + "." + strconv.FormatUint(seq, 10))
	m.Header.Set("Stampede-Id", e.ID)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Data = e.Body
	ok, _, err := s.publish(ctx, m)
	if err != nil || !ok {
		s.forgetHead(room)
		return false, err
	}
	s.mu.Lock()
	if seq > s.heads[room] {
		s.heads[room] = seq
	}
	s.mu.Unlock()
	if every := max(1, s.opt.Retention/8); seq > uint64(s.opt.Retention) && seq%uint64(every) == 0 {
		s.trim(ctx, room)
	}
	return true, nil
}

// head is the room's latest seq: this process's last known one, or
// (fresh, or none known) read from the stream.
func (s *Store) head(ctx context.Context, room string, fresh bool) (uint64, error) {
	if !fresh {
		s.mu.Lock()
		h, ok := s.heads[room]
		s.mu.Unlock()
		if ok {
			return h, nil
		}
	}
	h, err := s.Head(ctx, room)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.heads[room] = h
	s.mu.Unlock()
	return h, nil
}

func (s *Store) forgetHead(room string) {
	s.mu.Lock()
	delete(s.heads, room)
	s.mu.Unlock()
}

// trim keeps the last Retention messages of room and as many markers
// (errors are ignored: the next trim of the room purges the same).
func (s *Store) trim(ctx context.Context, room string) {
	Trim(ctx, s.js, s.stream, room, uint64(s.opt.Retention))
}

// Trim is the store's retention purge of one room: it purges the room's
// messages m.<room>.* and its dedupe markers d.<room>.* of stream down to
// the last keep of each. A Store calls it every Retention/8 appends to a
// room once its seq passes Retention; lab/jsrecover calls it the same
// way to write through retention.
func Trim(ctx context.Context, js jetstream.JetStream, stream, room string, keep uint64) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	pfx := "stampede." + stream + "."
	h := hex.EncodeToString([]byte(room))
	err1 := st.Purge(ctx, jetstream.WithPurgeSubject(pfx+"m."+h+".*"), jetstream.WithPurgeKeep(keep))
	err2 := st.Purge(ctx, jetstream.WithPurgeSubject(pfx+"d."+h+".*"), jetstream.WithPurgeKeep(keep))
	if err1 != nil {
		return err1
	}
	return err2
}

// pubAck is JetStream's answer to a publish.
type pubAck struct {
	Error *struct {
		Code    int    `json:"code"`
		ErrCode int    `json:"err_code"`
		Desc    string `json:"description"`
	} `json:"error"`
	Seq uint64 `json:"seq"`
}

// JetStream's error codes for a failed expected-last-subject-sequence.
const (
	errWrongLastSeq      = 10071
	errWrongLastSeqConst = 10164
)

// publish stores m in the stream and waits for the answer: ok false when
// its expected-sequence check failed (nothing stored).
func (s *Store) publish(ctx context.Context, m *nats.Msg) (ok bool, seq uint64, err error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reply, err := s.nc.RequestMsgWithContext(rctx, m)
	if err != nil {
		return false, 0, err
	}
	var ack pubAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return false, 0, fmt.Errorf("publish answer %q: %w", reply.Data, err)
	}
	if ack.Error != nil {
		if ack.Error.ErrCode == errWrongLastSeq || ack.Error.ErrCode == errWrongLastSeqConst {
			return false, 0, nil
		}
		return false, 0, fmt.Errorf("publish: %s (%d)", ack.Error.Desc, ack.Error.ErrCode)
	}
	return true, ack.Seq, nil
}

// direct runs a direct get of the stream with req and returns the
// messages found: none for a 404, every one up to the end-of-batch for a
// batch request.
func (s *Store) direct(ctx context.Context, req map[string]any) ([]*nats.Msg, error) {
	body, _ := json.Marshal(req)
	subject := "$JS.API.DIRECT.GET." + s.stream
	_, batch := req["batch"]
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !batch {
		m, err := s.nc.RequestWithContext(rctx, subject, body)
		if err != nil {
			return nil, err
		}
		switch st := m.Header.Get("Status"); st {
		case "":
			return []*nats.Msg{m}, nil
		case "404":
			return nil, nil
		default:
			return nil, fmt.Errorf("direct get: status %s %s", st, m.Header.Get("Description"))
		}
	}
	inbox := s.nc.NewRespInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, err
	}
	var out []*nats.Msg
	for {
		m, err := sub.NextMsgWithContext(rctx)
		if err != nil {
			return nil, fmt.Errorf("direct get: %w", err)
		}
		switch st := m.Header.Get("Status"); st {
		case "":
			out = append(out, m)
		case "204", "404":
			return out, nil
		default:
			return nil, fmt.Errorf("direct get: status %s %s", st, m.Header.Get("Description"))
		}
	}
}

// Head implements store.Store: the seq of the room's last message.
func (s *Store) Head(ctx context.Context, room string) (uint64, error) {
	msgs, err := s.direct(ctx, map[string]any{"last_by_subj": s.subj("m", room) + ".*"})
	if err != nil {
		return 0, fmt.Errorf("store: jetstream head: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	subj := msgs[0].Header.Get(jetstream.SubjectHeader)
	seq, err := strconv.ParseUint(subj[strings.LastIndexByte(subj, '.')+1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: jetstream head: bad subject %q", subj)
	}
	return seq, nil
}

// directPage is the most messages one direct get batch asks for.
const directPage = 1000

// Since implements store.Store: it finds the first message after afterSeq
// by its subject, then reads the room's messages on in stream order,
// which is seq order (seq n+1 is stored only once n is).
func (s *Store) Since(ctx context.Context, room string, afterSeq uint64, limit int) ([]store.Message, uint64, bool, error) {
	head, err := s.Head(ctx, room)
	if err != nil || afterSeq >= head {
		return nil, head, false, err
	}
	want := int(min(uint64(1<<31), head-afterSeq))
	if limit > 0 && limit < want {
		want = limit
	}
	first, err := s.direct(ctx, map[string]any{"last_by_subj": s.subj("m", room) + "." + strconv.FormatUint(afterSeq+1, 10)})
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: jetstream since: %w", err)
	}
	var from uint64 // stream sequence to read on from
	if len(first) == 1 {
		from, _ = strconv.ParseUint(first[0].Header.Get(jetstream.SequenceHeader), 10, 64)
	} else {
		from = 1 // a retention gap: the first kept message of the room
	}
	msgs := make([]store.Message, 0, min(want, directPage))
	for len(msgs) < want {
		page, err := s.direct(ctx, map[string]any{"seq": from, "next_by_subj": s.subj("m", room) + ".*", "batch": min(want-len(msgs), directPage)})
		if err != nil {
			return nil, 0, false, fmt.Errorf("store: jetstream since: %w", err)
		}
		for _, m := range page {
			subj := m.Header.Get(jetstream.SubjectHeader)
			seq, err := strconv.ParseUint(subj[strings.LastIndexByte(subj, '.')+1:], 10, 64)
			if err != nil {
				return nil, 0, false, fmt.Errorf("store: jetstream since: bad subject %q", subj)
			}
			from, _ = strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
			from++
			if seq <= afterSeq || seq > head || len(msgs) >= want {
				continue
			}
			msgs = append(msgs, store.Message{Seq: seq, ID: m.Header.Get("Stampede-Id"), Body: m.Data})
		}
		if len(page) == 0 || msgs[len(msgs)-1].Seq >= head {
			break
		}
	}
	through := head
	if limit > 0 && len(msgs) == limit {
		through = msgs[len(msgs)-1].Seq
	}
	gap := len(msgs) == 0 || msgs[0].Seq > afterSeq+1
	return msgs, through, gap, nil
}

// Follow implements store.Feed with an ordered consumer of the message
// subjects, headers only, from the next one stored on: JetStream delivers
// a message only once it is stored, so it is readable. The subject names
// the room and the seq. When the consumer resets (the connection
// dropped) fn(Update{}) is called.
func (s *Store) Follow(ctx context.Context, fn func(store.Update)) error {
	c, err := s.js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{s.pfx + ".m.>"},
		HeadersOnly:       true,
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		MaxResetAttempts:  -1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("store: jetstream feed: %w", err)
	}
	prefix := s.pfx + ".m."
	var mu sync.Mutex // fn is called from one goroutine at a time
	cc, err := c.Consume(func(m jetstream.Msg) {
		roomHex, seqStr, _ := strings.Cut(strings.TrimPrefix(m.Subject(), prefix), ".")
		room, err := hex.DecodeString(roomHex)
		seq, err2 := strconv.ParseUint(seqStr, 10, 64)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || err2 != nil {
			fn(store.Update{})
			return
		}
		fn(store.Update{Room: string(room), Seq: seq})
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		mu.Lock()
		defer mu.Unlock()
		fn(store.Update{})
	}))
	if err != nil {
		return fmt.Errorf("store: jetstream feed: %w", err)
	}
	// The consumer starts with the next message stored once the server
	// has created it: what was stored meanwhile is read by a recheck.
	mu.Lock()
	fn(store.Update{})
	mu.Unlock()
	<-ctx.Done()
	cc.Stop()
	<-cc.Closed()
	return ctx.Err()
}

// Close implements store.Store; it stops the embedded server this Store
// started itself (a jetstream:/// URL opened by one process).
func (s *Store) Close() error {
	s.nc.Drain()
	for i := 0; i < 100 && !s.nc.IsClosed(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	s.nc.Close()
	if s.srv != nil {
		return s.srv.Close()
	}
	return nil
}
