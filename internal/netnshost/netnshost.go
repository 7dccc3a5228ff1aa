// Package netnshost gives tests hosts to run a several-host fleet on: the
// network-namespace hosts of scripts/hosts.sh (docs/hosts.md), joined by a
// bridge that the root namespace, where the test runs, reaches too.
//
//	root namespace (the test, a coordinator)
//	      │ 10.203.K.1/24 on stampede-brK
//	      ├── veth ── stampedeK-h1  10.203.K.11   (lo up, no default route)
//	      ├── veth ── stampedeK-h2  10.203.K.12
//	      └── ...
//
// Up leases a set of its own (1..99: set 0 is left to people running the
// script by hand), so tests in different packages running at once never
// share hosts. A program runs in a host as a child (Host.Command, through
// `ip netns exec`), or a function runs on a thread moved into the host
// (Host.Do), which is how a test opens a listener or dials from inside it.
package netnshost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is returned (wrapped) when network namespaces cannot be
// made here: not root, no ip command, no CAP_SYS_ADMIN (the script's exit
// status 3).
var ErrUnavailable = errors.New("network namespaces cannot be made here")

// Host is one namespace host.
type Host struct {
	// Name is the network namespace's name (ip netns), e.g. stampede1-h2.
	Name string
	// Addr is the host's first address, on its eth0, in the bridge's /24.
	Addr netip.Addr
	// Addrs are all its addresses (hosts.sh --addrs), Addr first: source
	// addresses for a loadgen that needs more than one.
	Addrs []netip.Addr
}

// Set is a group of hosts on one bridge, as hosts.sh printed it.
type Set struct {
	// Number is the set's number K (hosts.sh --set K).
	Number int
	// Bridge is the bridge's name in the root namespace.
	Bridge string
	// Root is the bridge's address: how the hosts reach the root
	// namespace, and the source address the root namespace's connections
	// to them carry.
	Root netip.Addr
	// Hosts are the hosts in order, h1 first.
	Hosts []Host
}

// Script returns the path of scripts/hosts.sh, found by walking up from
// the working directory to the module's go.mod (a test's working
// directory is its package's).
func Script() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "scripts", "hosts.sh")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("netnshost: %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("netnshost: no go.mod above the working directory, so no scripts/hosts.sh")
		}
		dir = parent
	}
}

// UpSet runs `hosts.sh up n --set k --addrs m` (m addresses per host) and
// returns the set it printed. An error wraps ErrUnavailable when
// namespaces cannot be made here.
func UpSet(ctx context.Context, k, n, m int) (Set, error) {
	out, err := script(ctx, append(append([]string{"up", strconv.Itoa(n)}, opt("set", k)...), opt("addrs", m)...)...)
	if err != nil {
		return Set{}, err
	}
	return Parse(lastLine(out))
}

// DownSet runs `hosts.sh down --set k`.
func DownSet(ctx context.Context, k int) error {
	_, err := script(ctx, append([]string{"down"}, opt("set", k)...)...)
	return err
}

// StatusSet runs `hosts.sh status --set k` and returns what is up.
func StatusSet(ctx context.Context, k int) (Set, error) {
	out, err := script(ctx, append([]string{"status"}, opt("set", k)...)...)
	if err != nil {
		return Set{}, err
	}
	return Parse(lastLine(out))
}

// opt writes hosts.sh's option name with the value v.
func opt(name string, v int) []string { return []string{"--" + name, strconv.Itoa(v)} }

// script runs hosts.sh with args and returns its stdout; a failure's error
// carries its stderr, and wraps ErrUnavailable on exit status 3.
func script(ctx context.Context, args ...string) ([]byte, error) {
	path, err := Script()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{path}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	if err != nil {
		return nil, fmt.Errorf("hosts.sh %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.Bytes(), nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// Parse reads hosts.sh's machine-readable line,
// "hosts set=K bridge=NAME root=ADDR NAME=ADDR[,ADDR...] ...", hosts in
// order.
func Parse(line string) (Set, error) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "hosts" {
		return Set{}, fmt.Errorf("netnshost: %q is not hosts.sh's last line (hosts set=K bridge=NAME root=ADDR NAME=ADDR[,ADDR]...)", line)
	}
	var s Set
	for i, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return Set{}, fmt.Errorf("netnshost: field %d %q of %q is not NAME=VALUE", i+1, kv, line)
		}
		var err error
		switch i {
		case 0:
			if k != "set" {
				return Set{}, fmt.Errorf("netnshost: field 1 of %q is %q, want set=K", line, kv)
			}
			s.Number, err = strconv.Atoi(v)
		case 1:
			if k != "bridge" {
				return Set{}, fmt.Errorf("netnshost: field 2 of %q is %q, want bridge=NAME", line, kv)
			}
			s.Bridge = v
		case 2:
			if k != "root" {
				return Set{}, fmt.Errorf("netnshost: field 3 of %q is %q, want root=ADDR", line, kv)
			}
			s.Root, err = netip.ParseAddr(v)
		default:
			h := Host{Name: k}
			for a := range strings.SplitSeq(v, ",") {
				var ip netip.Addr
				if ip, err = netip.ParseAddr(a); err != nil {
					break
				}
				h.Addrs = append(h.Addrs, ip)
			}
			if err == nil {
				h.Addr = h.Addrs[0]
				s.Hosts = append(s.Hosts, h)
			}
		}
		if err != nil {
			return Set{}, fmt.Errorf("netnshost: field %d %q of %q: %v", i+1, kv, line, err)
		}
	}
	return s, nil
}

// Command returns a command that runs name with args inside the host:
// `ip netns exec HOST name args...`. ip execs the program itself, so the
// command's Process.Pid is the program's.
func (h Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Do runs fn on an OS thread moved into the host's network namespace and
// returns its error. Sockets fn opens belong to the host and stay there
// after Do returns: a listener opened in fn accepts the host's
// connections, a connection dialled in fn leaves from the host's address.
// Only fn's own goroutine is inside; goroutines it starts are not (dial
// and listen in fn itself). The thread is discarded if it cannot be moved
// back.
func (h Host) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netnshost: %w", err)
			return
		}
		defer orig.Close()
		ns, err := os.Open(filepath.Join("/run/netns", h.Name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netnshost: host %s: %w", h.Name, err)
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), syscall.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netnshost: enter %s: %w", h.Name, err)
			return
		}
		err = fn()
		// Back to the root namespace, or the thread dies with this
		// goroutine (it stays locked) and never runs other code.
		if unix.Setns(int(orig.Fd()), syscall.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
