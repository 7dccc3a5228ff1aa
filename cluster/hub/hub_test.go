package hub

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/cluster"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// newHub starts a hub with its token in a fresh folder.
func newHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	if cfg.TokenFile == "" {
		cfg.TokenFile = filepath.Join(t.TempDir(), "token")
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// join joins h as an agent serving its roles in this process.
func joinT(t *testing.T, ctx context.Context, url string, token []byte, name, role string, capacity int) *Joined {
	t.Helper()
	j, err := Join(ctx, JoinConfig{NATS: url, Token: token, Name: name, Role: role, Capacity: capacity, JoinTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return j
}

func serveInProcess(ctx context.Context, ch Channel) error {
	return agent.Serve(ctx, agent.OverLink(ch), agent.AgentConfig{})
}

// TestTokenFile: a new token is written with mode 0600 and read back; an
// existing file is read, not replaced.
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok, err := WriteToken(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	back, err := ReadToken(path)
	if err != nil || string(back) != string(tok) {
		t.Fatalf("read %q (%v), wrote %q", back, err, tok)
	}
	h := newHub(t, Config{TokenFile: path})
	if h.WroteToken() {
		t.Error("the hub replaced an existing token file")
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadToken(path); err == nil || !strings.Contains(err.Error(), "Hub.TokenFile: ") {
		t.Errorf("a short token: %v, want an error naming Hub.TokenFile", err)
	}
}

// TestEmbeddedServerPort: the embedded server's default is a free
// loopback port, never the 4222 of the machine's own NATS.
func TestEmbeddedServerPort(t *testing.T) {
	h := newHub(t, Config{})
	if !strings.HasPrefix(h.URL(), "nats://127.0.0.1:") || strings.HasSuffix(h.URL(), ":4222") {
		t.Errorf("embedded server at %s, want a loopback port other than 4222", h.URL())
	}
}

// TestFleetOverNATS: two loadgen agents join over the embedded server,
// shares in proportion to their capacities run against a real target,
// every piece crosses NATS, and the merged report is exactly the merge of
// each member's own.
func TestFleetOverNATS(t *testing.T) {
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	<-srv.Ready()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := newHub(t, Config{})
	tok, _ := ReadToken(h.cfg.TokenFile)
	served := make(chan error, 2)
	for i, c := range []int{30, 10} {
		go func() {
			j := joinT(t, ctx, h.URL(), tok, []string{"a", "b"}[i], RoleLoadgen, c)
			served <- j.Serve(ctx, serveInProcess)
		}()
	}
	members, err := h.Wait(ctx, 2, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	caps := []int{members[0].Capacity, members[1].Capacity}
	counts, err := cluster.ShareByCapacity(40, caps)
	if err != nil {
		t.Fatal(err)
	}
	fleet := loadgen.Config{Client: spec.Client{URL: srv.URL(), Clients: 40, Seed: 3, Policy: backoff.MustParse("fixed:initial=50ms")}}
	co := &cluster.Coordinator{StartDelay: 200 * time.Millisecond, PerMember: true}
	var agents []*cluster.Agent
	for i, share := range cluster.SplitCounts(fleet, counts) {
		m := members[i]
		if m.OffsetError <= 0 {
			t.Errorf("%s: offset error bound %v, want a positive half round trip", m.Name, m.OffsetError)
		}
		a := &cluster.Agent{Name: m.Name, Transport: agent.OverLink(m.Channel()), Plan: agent.Plan{RunID: "t", Role: agent.RoleLoadgen, Loadgen: &share}, Member: m.Name}
		if err := co.Place(a); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	if err := co.WaitReady(ctx, agents...); err != nil {
		t.Fatal(err)
	}
	at, err := co.Start(1500 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	rep, lost := co.Collect(ctx, at, 1500*time.Millisecond)
	if len(lost) > 0 {
		t.Fatal(lost)
	}
	if rep.Clients != 40 {
		t.Errorf("merged report of %d clients, want 40", rep.Clients)
	}
	for _, a := range agents {
		if a.Started().IsZero() {
			t.Errorf("%s: no start instant reported", a.Name)
		}
	}
	own, err := co.MemberReports(at)
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 2 || own["a"].Clients != 30 || own["b"].Clients != 10 {
		t.Fatalf("member reports %v, want a with 30 clients and b with 10", own)
	}
	for _, d := range []results.Dist{results.DistConnect} {
		want := *rep.Hist(d)
		sum := results.NewHistogram()
		sum.Merge(*own["a"].Hist(d))
		sum.Merge(*own["b"].Hist(d))
		if want == nil || want.TotalCount() != 40 || !sum.Equals(want) {
			t.Errorf("%s: merged histogram is not exactly the members' merge (%d values)", d, sum.TotalCount())
		}
	}
	h.Close() // bye: the agents return nil
	for range 2 {
		if err := <-served; err != nil {
			t.Errorf("agent after bye: %v", err)
		}
	}
}

// TestWrongTokenEmbedded: the embedded server itself refuses an agent
// without the run's token, with one clear error.
func TestWrongTokenEmbedded(t *testing.T) {
	h := newHub(t, Config{})
	_, err := Join(context.Background(), JoinConfig{NATS: h.URL(), Token: []byte("0123456789abcdef-wrong"), Name: "x", Role: RoleAny, JoinTimeout: 2 * time.Second})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "authorization") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("wrong token: %v, want one line saying the server refused it", err)
	}
}

// openServer starts a NATS server without authentication: a shared server
// where strangers may publish anything.
func openServer(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(s.Shutdown)
	return "nats://" + s.Addr().String()
}

// TestWrongTokenSharedServer: on a server that lets anyone in, the run's
// secret still decides: a wrong token is refused with one line, and a
// stranger's forged messages reach neither side.
func TestWrongTokenSharedServer(t *testing.T) {
	url := openServer(t)
	h := newHub(t, Config{NATS: url})
	_, err := Join(context.Background(), JoinConfig{NATS: url, Token: []byte("0123456789abcdef-wrong"), Name: "x", Role: RoleAny, JoinTimeout: 2 * time.Second})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not this run's") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("wrong token: %v, want one line saying it is not the run's", err)
	}

	// The right token joins; a stranger who forges a plan on the agent's
	// subject (listening to everything) is ignored.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stranger, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	seen := make(chan string, 64)
	if _, err := stranger.Subscribe("stampede.s.>", func(m *nats.Msg) {
		select {
		case seen <- m.Subject:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	tok, _ := ReadToken(h.cfg.TokenFile)
	j := joinT(t, ctx, url, tok, "good", RoleAny, 0)
	var down string
	for s := range seen {
		if strings.HasSuffix(s, ".down") {
			down = s
			break
		}
	}
	forged := newMsg([]byte("guess"), down, 1000, kMsg, 1, []byte(`{"v":1,"kind":"plan","plan":{"role":"loadgen"}}`))
	if err := stranger.PublishMsg(forged); err != nil {
		t.Fatal(err)
	}
	stranger.Flush()
	time.Sleep(300 * time.Millisecond)
	j.s.mu.Lock()
	n := len(j.s.chans)
	j.s.mu.Unlock()
	if n != 0 {
		t.Errorf("a forged message opened %d channel(s) on the agent", n)
	}
	members, err := h.Wait(ctx, 1, 10*time.Second)
	if err != nil || len(members) != 1 || members[0].Name != "good" {
		t.Fatalf("members %v (%v), want the one agent with the token", members, err)
	}
}

// TestAgentGoneIsLost: an agent whose process dies (its connection drops
// without a bye) is found gone by the coordinator within 5 s.
func TestAgentGoneIsLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := newHub(t, Config{})
	tok, _ := ReadToken(h.cfg.TokenFile)
	j := joinT(t, ctx, h.URL(), tok, "doomed", RoleLoadgen, 0)
	members, err := h.Wait(ctx, 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	j.nc.Close() // no bye: as a kill -9 leaves it
	select {
	case <-members[0].Gone():
		if d := time.Since(died); d > 5*time.Second {
			t.Errorf("found gone after %s, want within 5s", d)
		}
		if members[0].Err() == nil || errors.Is(members[0].Err(), ErrBye) {
			t.Errorf("gone with %v, want silence", members[0].Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the coordinator did not notice a dead agent in 10s")
	}
}

// TestCoordinatorGoneStopsAgent: when the coordinator disappears (no bye),
// an agent's roles see their transport fail and Serve returns within 5 s
// saying so.
func TestCoordinatorGoneStopsAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := openServer(t)
	h := newHub(t, Config{NATS: url})
	tok, _ := ReadToken(h.cfg.TokenFile)
	j := joinT(t, ctx, url, tok, "orphan", RoleLoadgen, 0)
	members, err := h.Wait(ctx, 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ch := agent.OverLink(members[0].Channel())
	roleErr := make(chan error, 1)
	served := make(chan error, 1)
	go func() {
		served <- j.Serve(ctx, func(ctx context.Context, ch Channel) error {
			for {
				if _, err := ch.Recv(); err != nil {
					roleErr <- err
					return err
				}
			}
		})
	}()
	if err := ch.Send(agent.Message{V: agent.Version, Kind: agent.KindStop}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	gone := time.Now()
	h.nc.Close() // the coordinator vanishes: no bye
	select {
	case err := <-served:
		if d := time.Since(gone); d > 5*time.Second {
			t.Errorf("the agent stopped after %s, want within 5s", d)
		}
		if err == nil || !strings.Contains(err.Error(), "coordinator is gone") {
			t.Errorf("Serve: %v, want the coordinator gone", err)
		}
		if rerr := <-roleErr; rerr == nil || errors.Is(rerr, net.ErrClosed) {
			t.Errorf("role saw %v", rerr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not notice its coordinator gone in 10s")
	}
}

// TestMachineNATS: a fleet's share runs over the NATS server of the
// machine (127.0.0.1:4222), the run's secret checked on top of it.
func TestMachineNATS(t *testing.T) {
	const addr = "127.0.0.1:4222"
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("NATS unreachable on %s: %v (STAMPEDE_REQUIRE_SERVICES=1)", addr, err)
		}
		t.Skipf("NATS unreachable on %s (%v): skipping; STAMPEDE_REQUIRE_SERVICES=1 makes this fail", addr, err)
	} else {
		c.Close()
	}
	srv, err := target.Start(target.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(target.Abrupt) })
	<-srv.Ready()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "nats://" + addr
	h := newHub(t, Config{NATS: url})
	if _, err := Join(ctx, JoinConfig{NATS: url, Token: []byte("0123456789abcdef-wrong"), Name: "x", Role: RoleAny, JoinTimeout: 2 * time.Second}); err == nil || !strings.Contains(err.Error(), "not this run's") {
		t.Errorf("wrong token on the machine's NATS: %v", err)
	}
	tok, _ := ReadToken(h.cfg.TokenFile)
	served := make(chan error, 1)
	go func() {
		j := joinT(t, ctx, url, tok, "m", RoleLoadgen, 0)
		served <- j.Serve(ctx, serveInProcess)
	}()
	members, err := h.Wait(ctx, 1, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fleet := loadgen.Config{Client: spec.Client{URL: srv.URL(), Clients: 20, Seed: 5, Policy: backoff.MustParse("fixed:initial=50ms")}}
	co := &cluster.Coordinator{StartDelay: 200 * time.Millisecond}
	a := &cluster.Agent{Name: "m", Transport: agent.OverLink(members[0].Channel()), Plan: agent.Plan{RunID: "t", Role: agent.RoleLoadgen, Loadgen: &fleet}, Member: "m"}
	if err := co.Place(a); err != nil {
		t.Fatal(err)
	}
	if err := co.WaitReady(ctx, a); err != nil {
		t.Fatal(err)
	}
	at, err := co.Start(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep, lost := co.Collect(ctx, at, time.Second)
	if len(lost) > 0 {
		t.Fatal(lost)
	}
	if h := *rep.Hist(results.DistConnect); h == nil || h.TotalCount() != 20 {
		t.Errorf("connect histogram over the machine's NATS: %v, want 20 values", h)
	}
	h.Close()
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// TestWaitNamesWhoIsMissing: a run whose agents do not all join gives up
// after its timeout with one line naming who joined, how many are missing
// and the join command; a second agent of a name already taken is refused.
func TestWaitNamesWhoIsMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := newHub(t, Config{JoinCommand: func(j JoinHint) string { return "join " + j.NATS + " with " + j.TokenFile }})
	tok, _ := ReadToken(h.cfg.TokenFile)
	joinT(t, ctx, h.URL(), tok, "only", RoleLoadgen, 0)
	_, err := Join(ctx, JoinConfig{NATS: h.URL(), Token: tok, Name: "only", Role: RoleAny, JoinTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `"only" has already joined`) {
		t.Errorf("a second agent named only: %v, want refused", err)
	}
	_, err = h.Wait(ctx, 2, time.Second)
	if err == nil {
		t.Fatal("Wait for 2 agents with 1 joined succeeded")
	}
	for _, want := range []string{"Storm.Agents: 2", "1 of 2 agents joined", "only (loadgen on ", "1 missing", "join " + h.URL() + " with " + h.cfg.TokenFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Wait: %q lacks %q", err, want)
		}
	}
}

// TestJoinCommandPlainWithoutHook: without Config.JoinCommand the hub
// names the join's parts in words and no command-line flag (only the
// command knows its flags).
func TestJoinCommandPlainWithoutHook(t *testing.T) {
	h := &Hub{cfg: Config{TokenFile: "/t/token", Creds: "/t/creds", CA: "/t/ca.pem"}, url: "nats://10.0.0.1:4222"}
	got := h.JoinCommand()
	for _, want := range []string{"nats://10.0.0.1:4222", "/t/token", "/t/creds", "/t/ca.pem"} {
		if !strings.Contains(got, want) {
			t.Errorf("JoinCommand() = %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "--") {
		t.Errorf("JoinCommand() = %q names a flag", got)
	}
}
