package group

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/stampede-dev/stampede/childproc"
	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// TestMain doubles as a `stampede target` child process, so Group tests
// start real processes without building the stampede binary.
func TestMain(m *testing.M) {
	if os.Getenv("STAMPEDE_TARGET_CHILD") == "1" {
		if len(os.Args) > 1 && os.Args[1] == "--fail" {
			os.Exit(3)
		}
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// runChild is a group's process: it reads its plan (the server config)
// from stdin, as `stampede agent` does, and runs the target.
func runChild() int {
	var p childPlan
	if err := childproc.ReadPlan(os.Stdin, &p); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if err := Run(context.Background(), RunConfig{Server: p.Server, JoinGroup: true}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childPlan is the plan these tests give a child.
type childPlan struct {
	Server target.Config `json:"server"`
}

// testSpawner starts this test binary as a group's process (TestMain runs
// runChild in it); extra is added to its arguments (a bad one makes it
// fail before its ready line).
func testSpawner(t testing.TB, extra ...string) Spawner {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, cfg target.Config, env []string, timeout time.Duration) (*childproc.Child, childproc.ReadyLine, error) {
		cmd := exec.Command(exe, extra...)
		cmd.Env = append(append(os.Environ(), env...), "STAMPEDE_TARGET_CHILD=1")
		cmd.Stderr = os.Stderr
		var l childproc.ReadyLine
		c, err := childproc.Start(ctx, "target", cmd, childPlan{Server: cfg}, &l, timeout)
		return c, l, err
	}
}

// startRun runs Run in this process and returns its ready line, the raw
// line, the signal channel and Run's result.
func startRun(t *testing.T, rc RunConfig) (childproc.ReadyLine, []byte, chan<- os.Signal, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	sigs := make(chan os.Signal, 1)
	rc.Stdout, rc.Signals = pw, sigs
	errc := make(chan error, 1)
	go func() { errc <- Run(context.Background(), rc); pw.Close() }()
	raw, err := bufio.NewReader(pr).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	var line childproc.ReadyLine
	if err := json.Unmarshal(raw, &line); err != nil {
		t.Fatalf("ready line %q: %v", raw, err)
	}
	t.Cleanup(func() {
		select {
		case sigs <- syscall.SIGUSR1:
		default:
		}
	})
	return line, raw, sigs, errc
}

func waitRun(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunReadyLineAndSIGTERM(t *testing.T) {
	line, raw, sigs, errc := startRun(t, RunConfig{})
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	if len(fields) != 6 || fields["ready"] != true || line.PID != os.Getpid() || line.Addr == "" || line.Control == "" || len(line.Token) != 64 {
		t.Fatalf("ready line %s; want exactly ready, addr, pid, control, token, t", raw)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields["t"].(string)); err != nil {
		t.Fatalf("t: %v", err)
	}
	conn := mustDial(t, "ws://"+line.Addr+"/")
	if st := pollStats(t, line, func(st target.Stats) bool { return st.UpgradesOK == 1 }); st.UpgradesOK != 1 {
		t.Fatalf("stats through the control API = %+v; want 1 upgrade", st)
	}
	sigs <- syscall.SIGTERM
	_, _, err := wsutil.ReadServerData(conn)
	var ce wsutil.ClosedError
	if !errors.As(err, &ce) || ce.Code != ws.StatusGoingAway {
		t.Fatalf("after SIGTERM the client read %v; want close 1001", err)
	}
	waitRun(t, errc)
}

func TestRunSIGUSR1IsAbrupt(t *testing.T) {
	line, _, sigs, errc := startRun(t, RunConfig{})
	conn := mustDial(t, "ws://"+line.Addr+"/")
	sigs <- syscall.SIGUSR1
	if _, err := readFrame(conn); err != io.EOF {
		t.Fatalf("after SIGUSR1 the client read %v; want EOF, no close frame", err)
	}
	waitRun(t, errc)
}

func TestRunShutdownThroughControl(t *testing.T) {
	line, _, _, errc := startRun(t, RunConfig{})
	resp, err := control(t, line, "POST", "/shutdown?mode=graceful")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("/shutdown answered %d", resp.StatusCode)
	}
	waitRun(t, errc)
}

func TestRunInvalid(t *testing.T) {
	err := Run(context.Background(), RunConfig{Server: target.Config{Server: spec.Server{Backlog: -3}}})
	var ce *spec.FieldError
	if !errors.As(err, &ce) || ce.Field != "Server.Backlog" {
		t.Fatalf("Run = %v; want a FieldError on Backlog", err)
	}
}

// With Procs 2, Run starts a group of children (this test binary), prints
// one ready line listing them, and forwards signals.
func TestRunGroup(t *testing.T) {
	line, _, sigs, errc := startRun(t, RunConfig{Server: target.Config{Server: spec.Server{Procs: 2}}, Spawn: testSpawner(t)})
	if len(line.Children) != 2 || line.PID != os.Getpid() || line.Children[0].Addr != line.Addr {
		t.Fatalf("ready line = %+v; want this process and 2 children on its addr", line)
	}
	for _, ch := range line.Children {
		if line.T.Before(ch.T) {
			t.Fatalf("group ready at %v before child %d at %v", line.T, ch.PID, ch.T)
		}
	}
	conn := mustDial(t, "ws://"+line.Addr+"/")
	st := pollStats(t, line, func(st target.Stats) bool { return st.Conns == 1 })
	if st.Procs != 2 || st.Conns != 1 {
		t.Fatalf("group stats = %+v; want 2 procs, 1 conn", st)
	}
	sigs <- syscall.SIGUSR1
	if _, err := readFrame(conn); err != io.EOF {
		t.Fatalf("after SIGUSR1 the client read %v; want EOF", err)
	}
	waitRun(t, errc)
}

// control makes a request to the control API of the ready line, with its
// token.
func control(t *testing.T, line childproc.ReadyLine, method, path string) (*http.Response, error) {
	t.Helper()
	req, err := controlapi.NewRequest(context.Background(), method, "http://"+line.Control+path, line.Token)
	if err != nil {
		t.Fatal(err)
	}
	return http.DefaultClient.Do(req)
}
