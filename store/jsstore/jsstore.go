// Package jsstore is the message store on NATS JetStream (docs/jetstream.md):
// the embedded default that the target processes of a group share. The
// group's owner runs a NATS server with JetStream in its own process
// (StartServer: file storage in the run's folder, every write fsynced
// before it is acknowledged); each target process connects to it.
//
//	jetstream:///abs/dir           the embedded server on that directory: a
//	                               target group's owner starts it (Host) and
//	                               hands its processes a nats:// URL; a
//	                               single process opening it runs it itself
//	nats://127.0.0.1:PORT[?stream=S]  a JetStream server already running
//
// One stream holds every room. Per message, in one atomic batch
// (Nats-Batch-Id, all or nothing):
//
//	<p>.m.<room>.<seq>   the message: header Stampede-Id, payload the body;
//	                     expected-last-subject-sequence 0, so each seq of
//	                     a room is stored once, whichever process wins
//	<p>.d.<room>.<id>    the dedupe marker, payload the seq; expected 0, so
//	                     an ID is stored once across every process
//	<p>.h.<room>         the room's head, once per batch (one kept per
//	                     subject): Head reads it, Follow consumes it
//
// room and id are hex in subjects. A batch that loses a race (another
// process stored the seq or the ID first) changes nothing; the store reads
// the head and the markers again and retries.
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
			return nil, fmt.Errorf("store: jetstream URL %q: want jetstream:///abs/dir", u.Redacted())
		}
		var err error
		if srv, err = StartServer(u.Path); err != nil {
			return nil, err
		}
		addr = strings.TrimPrefix(srv.URL(), "nats://")
	case "nats":
		if addr == "" {
			return nil, fmt.Errorf("store: nats URL %q names no host:port", u.Redacted())
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
			Name:               stream,
			Subjects:           []string{"stampede." + stream + ".>"},
			Storage:            jetstream.FileStorage,
			Retention:          jetstream.LimitsPolicy,
			MaxMsgsPerSubject:  1,
			Discard:            jetstream.DiscardOld,
			AllowDirect:        true,
			AllowAtomicPublish: true,
			Duplicates:         time.Second,
		})
	}
	if err != nil {
		nc.Close()
		if srv != nil {
			srv.Close()
		}
		return nil, fmt.Errorf("store: jetstream stream %s: %w", stream, err)
	}
	return &Store{nc: nc, js: js, stream: stream, pfx: "stampede." + stream, opt: opt, srv: srv, heads: map[string]uint64{}, locks: map[string]*roomLock{}}, nil
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
		return "", nil, fmt.Errorf("store: jetstream URL %q: want jetstream:///abs/dir", u.Redacted())
	}
	srv, err := StartServer(u.Path)
	if err != nil {
		return "", nil, err
	}
	shared := url.URL{Scheme: "nats", Host: strings.TrimPrefix(srv.URL(), "nats://"), RawQuery: u.RawQuery}
	return shared.String(), srv.Close, nil
}

func (s *Store) subj(kind, room string) string {
	return s.pfx + "." + kind + "." + hex.EncodeToString([]byte(room))
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	return store.AppendOne(ctx, s, room, id, body)
}

// AppendBatch implements store.Store: one atomic batch per attempt.
func (s *Store) AppendBatch(ctx context.Context, room string, entries []store.Entry) ([]store.Result, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	defer s.lockRoom(room)()
	for attempt := 0; ; attempt++ {
		res, lost, err := s.tryAppend(ctx, room, entries, attempt > 0)
		if err != nil {
			return nil, fmt.Errorf("store: jetstream append: %w", err)
		}
		if !lost {
			return res, nil
		}
		if attempt >= maxRetries {
			return nil, fmt.Errorf("store: jetstream append: lost %d races for room %q", attempt+1, room)
		}
		// Another process appends to the room too: back off a little,
		// more after each loss, so that one of them gets through.
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20))))):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryAppend makes one attempt; lost reports that another process stored
// the seq or an ID first, and nothing was stored.
func (s *Store) tryAppend(ctx context.Context, room string, entries []store.Entry, fresh bool) ([]store.Result, bool, error) {
	s.mu.Lock()
	head, known := s.heads[room]
	s.mu.Unlock()
	if !known || fresh {
		var err error
		if head, err = s.Head(ctx, room); err != nil {
			return nil, false, err
		}
	}
	res := make([]store.Result, len(entries))
	seen := map[string]uint64{}
	if !s.opt.NoDedupe {
		subjs := make([]string, 0, len(entries))
		for _, e := range entries {
			subjs = append(subjs, s.subj("d", room)+"."+hex.EncodeToString([]byte(e.ID)))
		}
		msgs, err := s.direct(ctx, map[string]any{"multi_last": subjs, "batch": len(subjs)})
		if err != nil {
			return nil, false, err
		}
		for _, m := range msgs {
			seq, err := strconv.ParseUint(string(m.Data), 10, 64)
			if err != nil {
				return nil, false, fmt.Errorf("bad dedupe marker %s", m.Header.Get(jetstream.SubjectHeader))
			}
			idHex := m.Header.Get(jetstream.SubjectHeader)
			idHex = idHex[strings.LastIndexByte(idHex, '.')+1:]
			id, _ := hex.DecodeString(idHex)
			seen[string(id)] = seq
		}
	}
	batch := make([]*nats.Msg, 0, 2*len(entries)+1)
	next := head
	for i, e := range entries {
		if seq, ok := seen[e.ID]; ok && !s.opt.NoDedupe {
			res[i] = store.Result{Seq: seq, Dup: true}
			continue
		}
		next++
		res[i] = store.Result{Seq: next}
		m := nats.NewMsg(s.subj("m", room) + "." + strconv.FormatUint(next, 10))
		m.Header.Set("Stampede-Id", e.ID)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		m.Data = e.Body
		batch = append(batch, m)
		if !s.opt.NoDedupe {
			seen[e.ID] = next
			d := nats.NewMsg(s.subj("d", room) + "." + hex.EncodeToString([]byte(e.ID)))
			d.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
			d.Data = strconv.AppendUint(nil, next, 10)
			batch = append(batch, d)
		}
	}
	if next == head {
		return res, false, nil // every entry a dup
	}
	h := nats.NewMsg(s.subj("h", room))
	h.Data = strconv.AppendUint(nil, next, 10)
	batch = append(batch, h)
	lost, err := s.publishAtomic(ctx, batch)
	if err != nil || lost {
		return nil, lost, err
	}
	s.mu.Lock()
	s.heads[room] = next
	s.mu.Unlock()
	if every := max(1, s.opt.Retention/8); next > uint64(s.opt.Retention) && next/uint64(every) != head/uint64(every) {
		s.trim(ctx, room)
	}
	return res, false, nil
}

// trim keeps the last Retention messages of room and as many markers.
func (s *Store) trim(ctx context.Context, room string) {
	st, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return
	}
	keep := uint64(s.opt.Retention)
	st.Purge(ctx, jetstream.WithPurgeSubject(s.subj("m", room)+".*"), jetstream.WithPurgeKeep(keep))
	st.Purge(ctx, jetstream.WithPurgeSubject(s.subj("d", room)+".*"), jetstream.WithPurgeKeep(keep))
}

// pubAck is the answer to a batch's commit.
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

// publishAtomic publishes msgs as one atomic batch and waits for the
// commit's answer. lost: an expected-sequence check failed (nothing
// stored).
func (s *Store) publishAtomic(ctx context.Context, msgs []*nats.Msg) (lost bool, err error) {
	id := nats.NewInbox()[len(nats.InboxPrefix):]
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == len(msgs)-1 {
			m.Header.Set("Nats-Batch-Commit", "1")
			break
		}
		if err := s.nc.PublishMsg(m); err != nil {
			return false, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reply, err := s.nc.RequestMsgWithContext(rctx, msgs[len(msgs)-1])
	if err != nil {
		return false, err
	}
	var ack pubAck
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return false, fmt.Errorf("batch commit answer %q: %w", reply.Data, err)
	}
	if ack.Error != nil {
		if ack.Error.ErrCode == errWrongLastSeq || ack.Error.ErrCode == errWrongLastSeqConst {
			return true, nil
		}
		return false, fmt.Errorf("batch: %s (%d)", ack.Error.Desc, ack.Error.ErrCode)
	}
	return false, nil
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

// Head implements store.Store: the room's head marker.
func (s *Store) Head(ctx context.Context, room string) (uint64, error) {
	msgs, err := s.direct(ctx, map[string]any{"last_by_subj": s.subj("h", room)})
	if err != nil {
		return 0, fmt.Errorf("store: jetstream head: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	seq, err := strconv.ParseUint(string(msgs[0].Data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: jetstream head: bad marker %q", msgs[0].Data)
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

// Follow implements store.Feed with an ordered consumer of the head
// markers, from the next one stored on: JetStream delivers a marker only
// once its batch is stored, so the messages are readable. When the
// consumer resets (the connection dropped) fn(Update{}) is called.
func (s *Store) Follow(ctx context.Context, fn func(store.Update)) error {
	c, err := s.js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{s.pfx + ".h.>"},
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		MaxResetAttempts:  -1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("store: jetstream feed: %w", err)
	}
	prefix := s.pfx + ".h."
	var mu sync.Mutex // fn is called from one goroutine at a time
	cc, err := c.Consume(func(m jetstream.Msg) {
		room, err := hex.DecodeString(strings.TrimPrefix(m.Subject(), prefix))
		seq, err2 := strconv.ParseUint(string(m.Data()), 10, 64)
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
