package childproc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the child: with STAMPEDE_CHILDPROC_TEST set it reads
// its plan and acts on it.
func TestMain(m *testing.M) {
	switch os.Getenv("STAMPEDE_CHILDPROC_TEST") {
	case "":
		os.Exit(m.Run())
	case "echo": // ready line echoing the plan, then wait to be killed
		var p testPlan
		if err := ReadPlan(os.Stdin, &p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("starting up") // not a ready line: skipped
		b, _ := json.Marshal(testReady{Ready: true, Got: p, PGID: syscall.Getpgrp()})
		fmt.Println(string(b))
		time.Sleep(time.Minute)
	case "exit":
		os.Exit(3)
	case "lastwords": // the plan's name back on stdout and stderr, then exit
		var p testPlan
		if err := ReadPlan(os.Stdin, &p); err != nil {
			os.Exit(2)
		}
		fmt.Println("out:", p.Name)
		fmt.Fprintln(os.Stderr, "err:", p.Name)
		os.Exit(0)
	case "readyexit": // a ready line, then exit at once
		WriteReady(os.Stdout, ReadyLine{Ready: true, Addr: "127.0.0.1:1", PID: os.Getpid()})
		os.Exit(0)
	case "silent":
		time.Sleep(time.Minute)
	}
}

type testPlan struct {
	Name  string        `json:"name"`
	Every time.Duration `json:"every"`
}

type testReady struct {
	Ready bool     `json:"ready"`
	Got   testPlan `json:"got"`
	PGID  int      `json:"pgid"`
}

func child(t *testing.T, mode string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "STAMPEDE_CHILDPROC_TEST="+mode)
	return cmd
}

// The plan reaches the child on stdin, intact; its ready line comes back
// decoded; the child has a process group of its own; Kill ends it.
func TestStartPlanAndReady(t *testing.T) {
	plan := testPlan{Name: "server 3", Every: 1500 * time.Millisecond}
	var ready testReady
	c, err := Start(context.Background(), "test", child(t, "echo"), plan, &ready, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Kill(); c.Wait() })
	if ready.Got != plan {
		t.Fatalf("the child got %+v; want %+v", ready.Got, plan)
	}
	if ready.PGID != c.PID() {
		t.Fatalf("the child's process group is %d; want its own, %d", ready.PGID, c.PID())
	}
	if c.Exited() {
		t.Fatal("exited before Kill")
	}
	c.Kill()
	if err := c.Wait(); err == nil || !c.Exited() {
		t.Fatalf("after Kill: Wait = %v, exited %v", err, c.Exited())
	}
}

// A child that exits before its ready line, or stays silent past the
// timeout, fails Start with a message that says which.
func TestStartFailures(t *testing.T) {
	var r testReady
	if _, err := Start(context.Background(), "test", child(t, "exit"), testPlan{}, &r, 10*time.Second); err == nil ||
		!strings.Contains(err.Error(), "exited before ready") {
		t.Errorf("exiting child: %v", err)
	}
	if _, err := Start(context.Background(), "test", child(t, "silent"), testPlan{}, &r, 300*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "not ready within") {
		t.Errorf("silent child: %v", err)
	}
}

// Spawn gives the parent the child's last words on stdout and stderr even
// when the child exits right after writing them: the pipes stay open until
// read to their end.
func TestSpawnKeepsLastWords(t *testing.T) {
	c, p, err := Spawn(child(t, "lastwords"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(testPlan{Name: "bye"})
	p.Stdin.Write(append(b, '\n'))
	p.Stdin.Close()
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	out, err := io.ReadAll(p.Stdout)
	if err != nil || string(out) != "out: bye\n" {
		t.Errorf("stdout %q, %v; want %q", out, err, "out: bye\n")
	}
	errOut, err := io.ReadAll(p.Stderr)
	if err != nil || string(errOut) != "err: bye\n" {
		t.Errorf("stderr %q, %v; want %q", errOut, err, "err: bye\n")
	}
	p.Stdout.Close()
	p.Stderr.Close()
}

// A child that exits right after its ready line is still ready: Start
// takes the line, not the race with the exit.
func TestStartReadyThenExit(t *testing.T) {
	for range 5 {
		var l ReadyLine
		c, err := Start(context.Background(), "test", child(t, "readyexit"), testPlan{}, &l, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Addr != "127.0.0.1:1" || l.PID != c.PID() {
			t.Errorf("ready line %+v; want addr 127.0.0.1:1, pid %d", l, c.PID())
		}
		c.Wait()
	}
}

// ReadPlan on a *bufio.Reader reads the plan's line and no further, so what
// follows it can be read from the same reader.
func TestReadPlanLeavesTheRest(t *testing.T) {
	in := bufio.NewReader(strings.NewReader(`{"name":"a","every":1}` + "\nnext line\n"))
	var p testPlan
	if err := ReadPlan(in, &p); err != nil || p != (testPlan{Name: "a", Every: 1}) {
		t.Fatalf("ReadPlan = %+v, %v", p, err)
	}
	rest, _ := io.ReadAll(in)
	if string(rest) != "next line\n" {
		t.Errorf("after the plan: %q; want %q", rest, "next line\n")
	}
}
