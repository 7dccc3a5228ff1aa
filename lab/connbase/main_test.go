//go:build linux

package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// TestMain makes the test binary the listener when Measure starts it.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "connbase listener:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasure: two rounds of 300 real loopback connections, from two
// source addresses, give every side's CPU per connect and per close,
// positive and finite, in one line.
func TestMeasure(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Measure(exe, "127.0.0.1", 300, 2, 150)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"connect": f.Connect, "accept": f.Accept, "close client": f.CloseClient, "close server": f.CloseServer} {
		if per := f.per(v); !(per > 0) || math.IsInf(per, 0) {
			t.Errorf("%s: %v µs per connection, want positive", name, per)
		}
	}
	line := f.Line()
	for _, want := range []string{"connbase: n=300 rounds=2 addr=127.0.0.1 per_source=150 connect_us=", " accept_us=", " connect_accept_us=", " close_client_us=", " close_server_us=", " close_us="} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if len(strings.Split(line, "\n")) != 1 {
		t.Errorf("not one line: %q", line)
	}
}

// TestMeasureBounds: only loopback, and no more connections at once than
// the open-file limit allows.
func TestMeasureBounds(t *testing.T) {
	exe, _ := os.Executable()
	for _, c := range []struct {
		addr      string
		n, rounds int
		want      string
	}{
		{"10.0.0.1", 10, 1, "127.0.0.0/8"},
		{"::1", 10, 1, "127.0.0.0/8"},
		{"127.0.0.1", 1 << 30, 1, "open-file limit"},
		{"127.0.0.1", 0, 1, "must be within"},
		{"127.0.0.1", 10, 0, "-rounds"},
	} {
		if _, err := Measure(exe, c.addr, c.n, c.rounds, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Measure(%s, n %d, rounds %d): %v, want an error naming %q", c.addr, c.n, c.rounds, err, c.want)
		}
	}
}
