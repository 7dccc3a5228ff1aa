package main

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
)

// Load to a host other than loopback is refused, with one line and before
// any socket opens, unless --allow-remote names the host: the drill's rule,
// for loadgen and http as well.
func TestRemoteRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"loadgen", []string{"loadgen", "--url", "ws://10.1.2.3/"},
			"stampede: --url ws://10.1.2.3/: host 10.1.2.3 is not loopback; load goes to another host only when --allow-remote 10.1.2.3 names it\n"},
		{"loadgen, another host allowed", []string{"loadgen", "--allow-remote", "10.9.9.9", "--url", "wss://10.1.2.3:8443/ws"},
			"stampede: --url wss://10.1.2.3:8443/ws: host 10.1.2.3 is not loopback; load goes to another host only when --allow-remote 10.1.2.3 names it\n"},
		{"http", []string{"http", "http://10.1.2.3/"},
			"stampede: http http://10.1.2.3/: host 10.1.2.3 is not loopback; load goes to another host only when --allow-remote 10.1.2.3 names it\n"},
		{"http fleet", []string{"http", "--clients", "2", "--rate", "1", "--duration", "1s", "http://example.com/"},
			"stampede: http http://example.com/: host example.com is not loopback; load goes to another host only when --allow-remote example.com names it\n"},
		// Allowed, the run goes on to its other checks: --clients 0 is
		// refused next, still before any socket.
		{"loadgen allowed", []string{"loadgen", "--allow-remote", "10.1.2.3", "--url", "ws://10.1.2.3/", "--clients", "0"},
			"stampede: --clients: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runApp(append([]string{"stampede"}, tc.args...), &stdout, &stderr)
			if code != 2 || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line starting %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// --max-attempt-rate caps the fleet's retries: ten clients refused at
// once and retrying every millisecond (the floor) would make thousands of
// attempts in half a second; capped at 40/s they make their 10 first
// connects and at most 20 retries (one more per reactor at most, for the
// first slot).
func TestMaxAttemptRate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, out, errOut := runLoadgen(t, "--url", "ws://"+addr+"/", "--clients", "10", "--duration", "500ms",
		"--policy", "fixed:initial=1ms", "--max-attempt-rate", "40", "--reactors", "2", "--progress", "0")
	// Nobody ever connects, so the run fails as unreachable (exit 1),
	// after its attempts are counted.
	if code != 1 || !strings.HasPrefix(errOut, "stampede: unreachable: ") {
		t.Fatalf("exit %d, stderr %q; want 1 and the unreachable line", code, errOut)
	}
	var attempts int
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "connect: "); ok {
			fmt.Sscanf(rest, "%d attempts", &attempts)
		}
	}
	if attempts < 10 || attempts > 10+20+2 {
		t.Errorf("%d attempts in 500ms at --max-attempt-rate 40, want 10 first connects and at most 22 retries:\n%s", attempts, out)
	}
}
