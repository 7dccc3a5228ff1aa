package jsstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/store"
)

// childEnv makes the test binary an embedded store server (see TestMain).
const childEnv = "STAMPEDE_JSSTORE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runServerChild())
	}
	os.Exit(m.Run())
}

// serverPlan is what a server child reads from its stdin.
type serverPlan struct {
	Dir string `json:"dir"`
}

// serverReady is a server child's ready line.
type serverReady struct {
	Ready bool   `json:"ready"`
	URL   string `json:"url"`
}

// runServerChild serves the embedded store of its plan's folder, as a
// target group's owner does, until it is killed.
func runServerChild() int {
	var p serverPlan
	if err := childproc.ReadPlan(os.Stdin, &p); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	u, err := url.Parse("jetstream://" + p.Dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	shared, _, err := host(context.Background(), u)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Printf("{\"ready\":true,\"url\":%q}\n", shared)
	select {} // until killed
}

// startServerChild runs the embedded server on dir in a child process.
func startServerChild(t *testing.T, dir string) (*childproc.Child, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	var r serverReady
	c, err := childproc.Start(context.Background(), "store server", cmd, serverPlan{Dir: dir}, &r, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Kill(); c.Wait() })
	return c, r.URL
}

// TestServerProcessSIGKILL runs the embedded store server in a child
// process, as a target group's owner runs it, appends through two stores
// (sync=1, the URL the owner hands out), SIGKILLs the server's process
// after a random number of ACKs, mid-stream, restarts it on the same
// folder and reads every ACKed message back with its seq. Eight rounds.
func TestServerProcessSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a store server process 8 times")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(8, 21))
	acked := map[string]uint64{}
	for round := range 8 {
		child, shared := startServerChild(t, dir)
		ctx, cancel := context.WithCancel(context.Background())
		stores := []store.Store{openURL(t, shared), openURL(t, shared)}
		killAt := 20 + rng.IntN(300)
		var mu sync.Mutex
		var wg sync.WaitGroup
		acks := 0
		for g := range 4 {
			wg.Go(func() {
				s := stores[g%2]
				for n := 0; n < 5000 && ctx.Err() == nil; n++ {
					id := fmt.Sprintf("%d-%d-%d", round, g, n)
					if n%7 == 0 && n > 0 {
						id = fmt.Sprintf("%d-%d-%d", round, g, n-1) // a resend
					}
					seq, _, err := s.Append(ctx, "r", id, []byte(strings.Repeat("k", 10+n%30)))
					if err != nil {
						return
					}
					mu.Lock()
					if old, ok := acked[id]; ok && old != seq {
						t.Errorf("round %d: %s ACKed with seq %d, earlier %d", round, id, seq, old)
					}
					acked[id] = seq
					if acks++; acks == killAt {
						child.Kill()
						cancel()
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		cancel()
		if err := child.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: the server process was not killed mid-stream (%d ACKs, exit %v)", round, acks, err)
		}
		for _, s := range stores {
			s.Close()
		}
		checker, shared := startServerChild(t, dir)
		s := openURL(t, shared)
		msgs, _, _, err := s.Since(context.Background(), "r", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]uint64{}
		for i, m := range msgs {
			if m.Seq != uint64(i+1) {
				t.Fatalf("round %d: seq %d at position %d", round, m.Seq, i)
			}
			stored[m.ID] = m.Seq
		}
		for id, seq := range acked {
			if got, ok := stored[id]; !ok || got != seq {
				t.Fatalf("round %d: ACKed %s seq %d: after the restart stored %v seq %d", round, id, seq, ok, got)
			}
		}
		s.Close()
		checker.Kill()
		checker.Wait()
	}
	t.Logf("8 SIGKILLs of the server's process, %d ACKed messages all read back", len(acked))
}
