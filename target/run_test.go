package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// TestMain doubles as a `stampede target` child process, so Group tests
// start real processes without building the stampede binary.
func TestMain(m *testing.M) {
	if os.Getenv("STAMPEDE_TARGET_CHILD") == "1" {
		os.Exit(runChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runChild parses the flags a Group passes (Config.Flags, --procs,
// --control-addr), as the stampede CLI does, and runs the target.
func runChild(args []string) int {
	var rc RunConfig
	c := &rc.Server
	fs := flag.NewFlagSet("target", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", "", "")
	fs.IntVar(&c.Backlog, "backlog", 0, "")
	fs.Float64Var(&c.AcceptRate, "accept-rate", 0, "")
	fs.IntVar(&c.AcceptBurst, "accept-burst", 0, "")
	fs.DurationVar(&c.HandshakeCost, "handshake-cost", 0, "")
	fs.DurationVar(&c.HandshakeTimeout, "handshake-timeout", 0, "")
	fs.BoolVar(&c.TLS, "tls", false, "")
	fs.StringVar(&c.CertFile, "cert", "", "")
	fs.StringVar(&c.KeyFile, "key", "", "")
	fs.IntVar(&c.MaxConns, "max-conns", 0, "")
	fs.DurationVar(&c.RejectRetryAfter, "reject-retry-after", 0, "")
	fs.DurationVar(&c.Hold, "hold", 0, "")
	fs.StringVar(&c.Store, "store", "", "")
	fs.BoolVar(&c.NoDedupe, "no-dedupe", false, "")
	fs.IntVar(&c.Retention, "retention", 0, "")
	fs.IntVar(&rc.Procs, "procs", 1, "")
	fs.StringVar(&rc.ControlAddr, "control-addr", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := Run(context.Background(), rc); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// startRun runs Run in this process and returns its ready line, the raw
// line, the signal channel and Run's result.
func startRun(t *testing.T, rc RunConfig) (ReadyLine, []byte, chan<- os.Signal, <-chan error) {
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
	var line ReadyLine
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
	if len(fields) != 5 || fields["ready"] != true || line.PID != os.Getpid() || line.Addr == "" || line.Control == "" {
		t.Fatalf("ready line %s; want exactly ready, addr, pid, control, t", raw)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields["t"].(string)); err != nil {
		t.Fatalf("t: %v", err)
	}
	conn := mustDial(t, "ws://"+line.Addr+"/")
	resp, err := http.Get("http://" + line.Control + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.UpgradesOK != 1 {
		t.Fatalf("stats through the control API = %+v; want 1 upgrade", st)
	}
	sigs <- syscall.SIGTERM
	_, _, err = wsutil.ReadServerData(conn)
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
	if _, err := ws.ReadFrame(conn); err != io.EOF {
		t.Fatalf("after SIGUSR1 the client read %v; want EOF, no close frame", err)
	}
	waitRun(t, errc)
}

func TestRunShutdownThroughControl(t *testing.T) {
	line, _, _, errc := startRun(t, RunConfig{})
	resp, err := http.Post("http://"+line.Control+"/shutdown?mode=graceful", "", nil)
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
	err := Run(context.Background(), RunConfig{Server: Config{Backlog: -3}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Backlog" {
		t.Fatalf("Run = %v; want a ConfigError on Backlog", err)
	}
}

// With Procs 2, Run starts a group of children (this test binary), prints
// one ready line listing them, and forwards signals.
func TestRunGroup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STAMPEDE_TARGET_CHILD", "1") // inherited by the children only
	line, _, sigs, errc := startRun(t, RunConfig{Procs: 2, Exe: exe, ChildArgs: []string{}})
	if len(line.Children) != 2 || line.PID != os.Getpid() || line.Children[0].Addr != line.Addr {
		t.Fatalf("ready line = %+v; want this process and 2 children on its addr", line)
	}
	for _, ch := range line.Children {
		if line.T.Before(ch.T) {
			t.Fatalf("group ready at %v before child %d at %v", line.T, ch.PID, ch.T)
		}
	}
	conn := mustDial(t, "ws://"+line.Addr+"/")
	resp, err := http.Get("http://" + line.Control + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Procs != 2 || st.Conns != 1 {
		t.Fatalf("group stats = %+v; want 2 procs, 1 conn", st)
	}
	sigs <- syscall.SIGUSR1
	if _, err := ws.ReadFrame(conn); err != io.EOF {
		t.Fatalf("after SIGUSR1 the client read %v; want EOF", err)
	}
	waitRun(t, errc)
}
