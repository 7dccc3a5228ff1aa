package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisServer finds the redis-server binary (the Debian package), or
// skips t, or fails it under STAMPEDE_REQUIRE_SERVICES=1.
func redisServer(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("redis-server")
	if err == nil {
		return exe
	}
	msg := "redis-server is not installed (" + err.Error() + ")"
	if os.Getenv("STAMPEDE_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg + "; STAMPEDE_REQUIRE_SERVICES=1 requires it")
	}
	t.Skip(msg + "; skipping (set STAMPEDE_REQUIRE_SERVICES=1 to fail instead)")
	return ""
}

// freePort returns a free port on 127.0.0.1 whose cluster bus port (port
// + 10000) is free too.
func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("no free port pair")
	return 0
}

// startRedis runs redis-server on a free 127.0.0.1 port with its files in
// a temporary directory and the extra arguments, waits until it answers
// PING, and stops it (by its PID) when t ends. It never touches another
// Redis on the machine.
func startRedis(t *testing.T, exe string, extra ...string) string {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--daemonize", "no", "--logfile", filepath.Join(dir, "log")}, extra...)
	cmd := exec.Command(exe, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := command(addr, "PING"); err == nil && reply == "+PONG" {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("redis-server on %s did not answer PING within 10 s:\n%s", addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command sends one inline command to addr and returns the first line of
// the reply, or, for a bulk string, its body.
func command(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return line, nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return line, err
	}
	body := make([]byte, n+2)
	_, err = io.ReadFull(r, body)
	return string(body[:n]), err
}

// startCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create (no replicas) and waits for cluster_state:ok.
// It returns the nodes' addresses.
func startCluster(t *testing.T) []string {
	t.Helper()
	exe := redisServer(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-server without redis-cli: %v", err)
	}
	var addrs []string
	for range 3 {
		addrs = append(addrs, startRedis(t, exe, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--appendonly", "no"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		for {
			info, _ := command(a, "CLUSTER INFO")
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s: no cluster_state:ok within 20 s:\n%s", a, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return addrs
}
