// Package haproxy talks to HAProxy's runtime API (its "stats socket", a
// unix socket at admin level) and samples its counters during a run, so a
// drill through a real load balancer also records what the balancer saw:
// sessions, queue, 5xx answers, retries and redispatches, per server
// (docs/loadbalancer.md).
//
//	Client ── "show stat" ──> ParseStat ──> []Stat
//	Sampler (one Client per HAProxy instance, once a second)
//	   ├─ rows summed over the instances ──> haproxy.csv
//	   └─ first to last sample ──> Totals ──> summary.json "haproxy"
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// DefaultTimeout bounds one runtime API command when Client.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Client sends commands to one HAProxy runtime API socket. The socket
// answers one command per connection (non-interactive mode), so a Client
// holds no connection and may be used from several goroutines.
type Client struct {
	// Socket is the path of the unix socket (`stats socket PATH level admin`).
	Socket string
	// Timeout bounds one command, connect to last byte; zero means
	// DefaultTimeout.
	Timeout time.Duration
}

// Command sends cmd and returns HAProxy's whole answer.
func (c *Client) Command(ctx context.Context, cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\n;") {
		return "", fmt.Errorf("haproxy: one command per call, got %q", cmd)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return "", fmt.Errorf("haproxy %s: %w", c.Socket, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", fmt.Errorf("haproxy %s: %s: %w", c.Socket, cmd, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("haproxy %s: %s: %w", c.Socket, cmd, err)
	}
	return string(out), nil
}

// ShowStat returns the counters of every frontend, backend and server.
func (c *Client) ShowStat(ctx context.Context) ([]Stat, error) {
	out, err := c.Command(ctx, "show stat")
	if err != nil {
		return nil, err
	}
	st, err := ParseStat(strings.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("haproxy %s: show stat: %w", c.Socket, err)
	}
	return st, nil
}

// State is a server's administrative state, as `set server` takes it.
type State string

// The administrative states of a server.
const (
	// StateReady takes new clients.
	StateReady State = "ready"
	// StateDrain keeps its clients but takes no new one.
	StateDrain State = "drain"
	// StateMaint takes no client and is out of the health checks' count.
	StateMaint State = "maint"
)

// ErrCommand is the cause of an error HAProxy answered a command with.
var ErrCommand = errors.New("haproxy refused the command")

// SetServerState sets backend/server's administrative state.
func (c *Client) SetServerState(ctx context.Context, backend, server string, s State) error {
	switch s {
	case StateReady, StateDrain, StateMaint:
	default:
		return fmt.Errorf("haproxy: state %q: want ready, drain or maint", s)
	}
	return c.quiet(ctx, fmt.Sprintf("set server %s/%s state %s", backend, server, s))
}

// quiet runs a command whose success is an empty answer.
func (c *Client) quiet(ctx context.Context, cmd string) error {
	out, err := c.Command(ctx, cmd)
	if err != nil {
		return err
	}
	if msg := strings.TrimSpace(out); msg != "" {
		return fmt.Errorf("haproxy %s: %s: %w: %s", c.Socket, cmd, ErrCommand, msg)
	}
	return nil
}
