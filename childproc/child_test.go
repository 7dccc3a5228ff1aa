package childproc

import (
	"context"
	"encoding/json"
	"fmt"
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
