package group

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestProtocolSIGKILLLosesNoACKedMessage runs `stampede target --store DIR`
// as a child process, has clients send into one room, SIGKILLs the target
// after a random number of ACKs (mid-writes), restarts it on the same
// store, and checks that a resume from 0 replays every ACKed message with
// its ACKed seq, and that a resend is deduped to its original seq. 20
// rounds.
func TestProtocolSIGKILLLosesNoACKedMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a target process 20 times")
	}
	sigkillRounds(t, filepath.Join(t.TempDir(), "store"))
}

// TestProtocolSIGKILLJetStream is the same on the embedded JetStream
// store, which the group (this test process) runs and its process opens
// by nats://: 20 SIGKILLs of the target process lose no ACKed message.
func TestProtocolSIGKILLJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a target process 20 times")
	}
	sigkillRounds(t, "jetstream://"+filepath.Join(t.TempDir(), "store"))
}

func sigkillRounds(t *testing.T, storeURL string) {
	g := startGroup(t, 1, target.Config{Server: spec.Server{Store: storeURL, Retention: 1_000_000}})
	rng := rand.New(rand.NewPCG(7, 11))
	acked := map[string]uint64{}
	for round := range 20 {
		var mu sync.Mutex
		n := 0
		killAt := 10 + rng.IntN(200)
		killed := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		conns := make([]net.Conn, 4) // all connected before anyone sends
		for s := range conns {
			conns[s] = mustDial(t, g.URL())
		}
		for s, conn := range conns {
			wg.Go(func() { // writer: as fast as the socket takes them
				for i := 0; i < 400; i++ {
					msg := protocol.AppendMsg(nil, fmt.Sprintf("k%d-%d-%d", round, s, i), "r", []byte("body"))
					if wsutil.WriteClientText(conn, msg) != nil {
						return
					}
					select {
					case <-killed:
						return
					default:
					}
				}
			})
			wg.Go(func() { // reader: records the ACKs
				defer conn.Close()
				var f protocol.Frame
				for {
					p, err := wsutil.ReadServerText(conn)
					if err != nil {
						return
					}
					if protocol.Decode(p, &f) != nil || f.Type != protocol.TypeAck {
						continue
					}
					mu.Lock()
					acked[string(f.ID)] = f.Seq
					n++
					if n >= killAt {
						once.Do(func() { g.Kill(); close(killed) })
					}
					mu.Unlock()
				}
			})
		}
		select {
		case <-killed:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: only %d ACKs in 20 s", round, n)
		}
		g.Wait()
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := g.Respawn(ctx, 0); err != nil {
			cancel()
			t.Fatalf("round %d: respawn: %v", round, err)
		}
		cancel()
		checkReplay(t, g.URL(), round, acked)
	}
	t.Logf("20 kills, %d ACKed messages all replayed with their seqs", len(acked))
}

// checkReplay resumes room r from 0 and checks every ACKed message is
// replayed with its seq, seqs dense, then that a resend is a dup.
func checkReplay(t *testing.T, url string, round int, acked map[string]uint64) {
	t.Helper()
	c := &pclient{T: t, Name: "checker", Conn: mustDial(t, url)}
	defer c.Conn.Close()
	c.Send(`{"type":"resume","room":"r","last_seq":0}`)
	stored := map[string]uint64{}
	var last uint64
	for {
		f := c.Next()
		if f.Type == protocol.TypeResumed {
			if f.Through != last {
				t.Fatalf("round %d: resumed through %d after replaying up to %d", round, f.Through, last)
			}
			break
		}
		if f.Type != protocol.TypeDeliver || f.Seq != last+1 {
			t.Fatalf("round %d: got %s seq %d after %d", round, f.Type, f.Seq, last)
		}
		last = f.Seq
		stored[string(f.ID)] = f.Seq
	}
	var anyID string
	for id, seq := range acked {
		if got, ok := stored[id]; !ok || got != seq {
			t.Fatalf("round %d: ACKed %s seq %d; replayed: %v seq %d", round, id, seq, ok, got)
		}
		anyID = id
	}
	if anyID != "" {
		c.Send(string(protocol.AppendMsg(nil, anyID, "r", []byte("resend"))))
		c.Expect(fmt.Sprintf(`{"type":"ack","id":%q,"seq":%d,"dup":true}`, anyID, acked[anyID]))
	}
	ws.WriteFrame(c.Conn, ws.MaskFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(1000, ""))))
}
