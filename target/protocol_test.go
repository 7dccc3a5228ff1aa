package target

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-dev/stampede/internal/wstest"
	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/spec"
)

// pclient is a test client of the message protocol.
type pclient = wstest.ProtoClient

func dialProto(t *testing.T, s *Server, name string) *pclient {
	t.Helper()
	return &pclient{T: t, Name: name, Conn: mustDial(t, s.URL())}
}

// storeURLs are the stores the protocol tests run on: the embedded one
// always, Redis and PostgreSQL when reachable on 127.0.0.1 (or required by
// STAMPEDE_REQUIRE_SERVICES=1), each under a fresh prefix or table that is
// removed afterwards.
func storeURLs(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"file": func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "store") },
		"redis": func(t *testing.T) string {
			needService(t, "Redis", "127.0.0.1:6379")
			prefix := uniqueName() + ":"
			t.Cleanup(func() {
				c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
				defer c.Close()
				ctx := context.Background()
				it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
				for it.Next(ctx) {
					c.Del(ctx, it.Val())
				}
			})
			return "redis://127.0.0.1:6379/0?prefix=" + prefix
		},
		"postgres": func(t *testing.T) string {
			needService(t, "PostgreSQL", "127.0.0.1:5432")
			const base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
			table := uniqueName()
			t.Cleanup(func() {
				c, err := pgx.Connect(context.Background(), base)
				if err != nil {
					return
				}
				defer c.Close(context.Background())
				c.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+", "+table+"_rooms")
			})
			return base + "&table=" + table
		},
	}
}

func needService(t *testing.T, name, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s unreachable on %s: %v (STAMPEDE_REQUIRE_SERVICES=1)", name, addr, err)
	}
	t.Skipf("%s unreachable on %s (%v): skipping; STAMPEDE_REQUIRE_SERVICES=1 makes this fail", name, addr, err)
}

func uniqueName() string {
	var b [6]byte
	rand.Read(b[:])
	return "stampede_ttest_" + hex.EncodeToString(b[:])
}

// TestProtocolExchange walks the example of docs/protocol.md on every
// store: join, msg/ack/deliver, a killed target, resume with replay, a
// resent message ACKed with its original seq and not delivered again.
func TestProtocolExchange(t *testing.T) {
	for name, url := range storeURLs(t) {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Server: spec.Server{Store: url(t)}}
			s := startServer(t, cfg)
			alice, bob := dialProto(t, s, "alice"), dialProto(t, s, "bob")
			alice.Send(`{"type":"join","room":"r"}`)
			alice.Expect(`{"type":"joined","room":"r","through":0}`)
			bob.Send(`{"type":"join","room":"r"}`)
			bob.Expect(`{"type":"joined","room":"r","through":0}`)

			alice.Send(`{"type":"msg","id":"a-1","room":"r","body":"hello"}`)
			alice.Expect(`{"type":"ack","id":"a-1","seq":1}`)
			bob.Expect(`{"type":"deliver","room":"r","seq":1,"id":"a-1","body":"hello"}`)
			alice.Send(`{"type":"msg","id":"a-2","room":"r","body":"still there?"}`)
			alice.Expect(`{"type":"ack","id":"a-2","seq":2}`)
			bob.Expect(`{"type":"deliver","room":"r","seq":2,"id":"a-2","body":"still there?"}`)
			bob.Conn.Close() // Bob goes away having seen 2
			// Until the server has read his close, Bob is still a member and
			// a message would be delivered to him (a write to a socket
			// whose peer closed succeeds once), making Delivered 3.
			eventually(t, "bob gone", func() bool { return s.Stats().Conns == 1 })

			// A resend before the restart: ACKed again, delivered to nobody.
			alice.Send(`{"type":"msg","id":"a-1","room":"r","body":"hello"}`)
			alice.Expect(`{"type":"ack","id":"a-1","seq":1,"dup":true}`)
			alice.Send(`{"type":"msg","id":"a-3","room":"r","body":"third"}`)
			alice.Expect(`{"type":"ack","id":"a-3","seq":3}`)
			// Counters are bumped after the write the client saw.
			eventually(t, "stats before restart", func() bool {
				st := s.Stats()
				return st.MsgsAcked == 4 && st.DupSuppressed == 1 && st.Delivered == 2
			})

			s.Shutdown(Abrupt)
			s2 := startServer(t, cfg)
			carol := dialProto(t, s2, "carol")
			carol.Send(`{"type":"msg","id":"c-9","room":"r","body":"anyone?"}`)
			carol.Expect(`{"type":"ack","id":"c-9","seq":4}`)

			alice = dialProto(t, s2, "alice")
			alice.Send(`{"type":"resume","room":"r","last_seq":3}`)
			alice.Expect(`{"type":"deliver","room":"r","seq":4,"id":"c-9","body":"anyone?"}`)
			alice.Expect(`{"type":"resumed","room":"r","through":4}`)
			alice.Send(`{"type":"msg","id":"a-3","room":"r","body":"third"}`)
			alice.Expect(`{"type":"ack","id":"a-3","seq":3,"dup":true}`)

			bob = dialProto(t, s2, "bob")
			bob.Send(`{"type":"resume","room":"r","last_seq":2}`)
			bob.Expect(`{"type":"deliver","room":"r","seq":3,"id":"a-3","body":"third"}`)
			bob.Expect(`{"type":"deliver","room":"r","seq":4,"id":"c-9","body":"anyone?"}`)
			bob.Expect(`{"type":"resumed","room":"r","through":4}`)

			// Live again: Bob gets Alice's next message, Alice does not.
			alice.Send(`{"type":"msg","id":"a-4","room":"r","body":"back"}`)
			alice.Expect(`{"type":"ack","id":"a-4","seq":5}`)
			bob.Expect(`{"type":"deliver","room":"r","seq":5,"id":"a-4","body":"back"}`)
			bob.Send(`{"type":"msg","id":"b-1","room":"r","body":"hi"}`)
			bob.Expect(`{"type":"ack","id":"b-1","seq":6}`)
			alice.Expect(`{"type":"deliver","room":"r","seq":6,"id":"b-1","body":"hi"}`)

			want := Stats{Procs: 1, MsgsAcked: 4, DupSuppressed: 1, Delivered: 2, Resumes: 2, Replayed: 3}
			eventually(t, fmt.Sprintf("stats %+v after restart", want), func() bool {
				st := s2.Stats()
				st.Conns, st.Accepted, st.UpgradesOK, st.MessagesIn, st.MessagesOut = 0, 0, 0, 0, 0
				st.Syscalls = nil
				return reflect.DeepEqual(st, want)
			})
		})
	}
}

// TestProtocolResumeGap: a client away longer than the retention is told
// which seqs are gone, then gets the rest.
func TestProtocolResumeGap(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Store: filepath.Join(t.TempDir(), "s"), Retention: 3}})
	a := dialProto(t, s, "a")
	for i := 1; i <= 10; i++ {
		a.Send(fmt.Sprintf(`{"type":"msg","id":"m%d","room":"r","body":"%d"}`, i, i))
		a.Expect(fmt.Sprintf(`{"type":"ack","id":"m%d","seq":%d}`, i, i))
	}
	b := dialProto(t, s, "b")
	b.Send(`{"type":"resume","room":"r","last_seq":2}`)
	b.Expect(`{"type":"resume_gap","room":"r","from":3,"through":7}`)
	for i := 8; i <= 10; i++ {
		b.Expect(fmt.Sprintf(`{"type":"deliver","room":"r","seq":%d,"id":"m%d","body":"%d"}`, i, i, i))
	}
	b.Expect(`{"type":"resumed","room":"r","through":10}`)
	eventually(t, "1 resume gap, 3 replayed", func() bool {
		st := s.Stats()
		return st.ResumeGaps == 1 && st.Replayed == 3
	})
	// A client ahead of the store (wiped) is told where the room is.
	c := dialProto(t, s, "c")
	c.Send(`{"type":"resume","room":"r","last_seq":50}`)
	c.Expect(`{"type":"resumed","room":"r","through":10}`)
}

// TestProtocolNoDedupe: with dedupe off a resend is stored and delivered
// again, the duplicate the tracker must see.
func TestProtocolNoDedupe(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Store: filepath.Join(t.TempDir(), "s"), NoDedupe: true}})
	a, b := dialProto(t, s, "a"), dialProto(t, s, "b")
	b.Send(`{"type":"join","room":"r"}`)
	b.Expect(`{"type":"joined","room":"r","through":0}`)
	for seq := 1; seq <= 2; seq++ {
		a.Send(`{"type":"msg","id":"x","room":"r","body":"once"}`)
		a.Expect(fmt.Sprintf(`{"type":"ack","id":"x","seq":%d}`, seq))
		b.Expect(fmt.Sprintf(`{"type":"deliver","room":"r","seq":%d,"id":"x","body":"once"}`, seq))
	}
	eventually(t, "2 delivered", func() bool { return s.Stats().Delivered == 2 })
	if st := s.Stats(); st.DupSuppressed != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestProtocolBadFrames: every malformed or forbidden frame closes its
// connection with a protocol close code and a reason; the server goes on.
func TestProtocolBadFrames(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Store: filepath.Join(t.TempDir(), "s")}})
	tests := []struct {
		name   string
		frames []string
		binary bool
		code   ws.StatusCode
		reason string
	}{
		{"bad JSON", []string{`{"type":"msg",`}, false, 1008, "protocol: bad JSON"},
		{"not an object", []string{`hello`}, false, 1008, "protocol: bad JSON"},
		{"unknown type", []string{`{"type":"shout","room":"r"}`}, false, 1008, "protocol: unknown frame type"},
		{"missing field", []string{`{"type":"msg","id":"x","room":"r"}`}, false, 1008, `protocol: missing field "body"`},
		{"server frame from a client", []string{`{"type":"ack","id":"x","seq":1}`}, false, 1008, "protocol: a client may not send ack"},
		{"oversized", []string{`{"type":"msg","id":"x","room":"r","body":"` + strings.Repeat("b", protocol.MaxFrameSize) + `"}`}, false, 1009, "protocol: frame too large"},
		{"binary", []string{`{"type":"join","room":"r"}`}, true, 1003, "protocol: frames are JSON text"},
		{"too many rooms", func() []string {
			var f []string
			for i := range MaxRoomsPerConn + 1 {
				f = append(f, fmt.Sprintf(`{"type":"join","room":"r%d"}`, i))
			}
			return f
		}(), false, 1008, "protocol: more than 64 rooms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dialProto(t, s, "c")
			for _, f := range tc.frames {
				op := ws.OpText
				if tc.binary {
					op = ws.OpBinary
				}
				if err := wsutil.WriteClientMessage(c.Conn, op, []byte(f)); err != nil {
					t.Fatal(err)
				}
			}
			ce := c.Closed()
			if ce.Code != tc.code || !strings.HasPrefix(ce.Reason, tc.reason) {
				t.Fatalf("close = %d %q, want %d %q...", ce.Code, ce.Reason, tc.code, tc.reason)
			}
		})
	}
	ok := dialProto(t, s, "ok")
	ok.Send(`{"type":"join","room":"fine"}`)
	ok.Expect(`{"type":"joined","room":"fine","through":0}`)
}

// TestProtocolConcurrentSenders: members of one room sending at once each
// receive every other member's message exactly once, in seq order, and
// the seqs are dense.
func TestProtocolConcurrentSenders(t *testing.T) {
	s := startServer(t, Config{Server: spec.Server{Store: filepath.Join(t.TempDir(), "s")}})
	const members, each = 5, 40
	clients := make([]*pclient, members)
	for i := range clients {
		clients[i] = dialProto(t, s, fmt.Sprint("m", i))
		clients[i].Send(`{"type":"join","room":"r"}`)
		clients[i].Expect(`{"type":"joined","room":"r","through":0}`)
	}
	type seen struct {
		seqs []uint64 // deliver and own ack seqs, in arrival order per kind
		own  map[uint64]bool
		err  error
	}
	results := make([]seen, members)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for n := range each {
				wsutil.WriteClientText(c.Conn, fmt.Appendf(nil, `{"type":"msg","id":"m%d-%d","room":"r","body":"x"}`, i, n))
			}
		}()
		go func() {
			defer wg.Done()
			res := seen{own: map[uint64]bool{}}
			defer func() { results[i] = res }()
			var last uint64
			c.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			for got := 0; got < members*each; got++ {
				p, err := wsutil.ReadServerText(c.Conn)
				var f protocol.Frame
				if err == nil {
					err = protocol.Decode(p, &f)
				}
				if err != nil {
					res.err = err
					return
				}
				switch f.Type {
				case protocol.TypeAck:
					res.own[f.Seq] = true
				case protocol.TypeDeliver:
					if strings.HasPrefix(string(f.ID), fmt.Sprintf("m%d-", i)) {
						res.err = fmt.Errorf("own message %s delivered back", f.ID)
						return
					}
				}
				if f.Seq <= last {
					res.err = fmt.Errorf("seq %d after %d", f.Seq, last)
					return
				}
				last = f.Seq
				res.seqs = append(res.seqs, f.Seq)
			}
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("member %d: %v", i, r.err)
		}
		if len(r.own) != each || len(r.seqs) != members*each || r.seqs[len(r.seqs)-1] != members*each {
			t.Fatalf("member %d: %d acks, %d frames ending at %d", i, len(r.own), len(r.seqs), r.seqs[len(r.seqs)-1])
		}
	}
}

func TestProtocolConfig(t *testing.T) {
	if _, err := Start(Config{Server: spec.Server{Store: "redis://127.0.0.1:1/0"}}); err == nil {
		t.Fatal("Start with an unreachable store succeeded")
	}
	dir := filepath.Join(t.TempDir(), "locked")
	s := startServer(t, Config{Server: spec.Server{Store: dir}})
	if _, err := Start(Config{Server: spec.Server{Store: dir}}); err == nil {
		t.Fatal("a second server on the same embedded store started")
	}
	_ = s
	var ce *spec.FieldError
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no-dedupe without store", Config{Server: spec.Server{NoDedupe: true}}.Validate()},
		{"retention without store", Config{Server: spec.Server{Retention: 5}}.Validate()},
		{"negative retention", Config{Server: spec.Server{Store: "x", Retention: -1}}.Validate()},
	} {
		if !errors.As(tc.err, &ce) {
			t.Errorf("%s: Validate = %v, want a *spec.FieldError", tc.name, tc.err)
		}
	}
}
