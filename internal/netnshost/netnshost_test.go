package netnshost

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestParse reads hosts.sh's last line, and refuses what is not one.
func TestParse(t *testing.T) {
	s, err := Parse("hosts set=3 bridge=stampede-br3 root=10.203.3.1 stampede3-h1=10.203.3.11 stampede3-h2=10.203.3.12,10.203.3.14")
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr
	want := Set{Number: 3, Bridge: "stampede-br3", Root: ip("10.203.3.1"), Hosts: []Host{
		{Name: "stampede3-h1", Addr: ip("10.203.3.11"), Addrs: []netip.Addr{ip("10.203.3.11")}},
		{Name: "stampede3-h2", Addr: ip("10.203.3.12"), Addrs: []netip.Addr{ip("10.203.3.12"), ip("10.203.3.14")}},
	}}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	// A set with no host up (status after down) parses to no hosts.
	if s, err := Parse("hosts set=0 bridge=stampede-br0 root=10.203.0.1"); err != nil || len(s.Hosts) != 0 {
		t.Fatalf("empty set: %+v, %v", s, err)
	}
	for _, bad := range []string{
		"",
		"stampede-h1 10.203.0.11", // a host line, not the last one
		"hosts set=x bridge=b root=10.203.0.1",
		"hosts bridge=b set=0 root=10.203.0.1", // order is fixed
		"hosts set=0 bridge=b root=10.203.0.1 h1",   // not NAME=ADDR
		"hosts set=0 bridge=b root=10.203.0.1 h1=x", // not an address
		"hosts set=0 bridge=b root=10.203.0.1 h1=10.203.0.11,",
		"hosts set=0 bridge=b root=nope",
	} {
		if s, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", bad, s)
		}
	}
}

// echoServer accepts on ln and echoes each connection's first line back;
// it sends the remote address of every connection it accepts on peers.
func echoServer(t *testing.T, ln net.Listener) <-chan netip.Addr {
	peers := make(chan netip.Addr, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			peers <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					io.WriteString(c, line)
				}
			})
		}
	})
	return peers
}

// roundTrip dials addr, sends a line and returns what came back.
func roundTrip(addr, line string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	back, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(back, "\n"), err
}

func expectPeer(t *testing.T, peers <-chan netip.Addr, want netip.Addr, from string) {
	t.Helper()
	select {
	case got := <-peers:
		if got != want {
			t.Errorf("connection from %s arrived from %v, want %v", from, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no connection from %s accepted", from)
	}
}

// TestReach: a listener inside host 1 is reached from the root namespace
// (arriving from the bridge's address), from host 2 by a thread moved into
// it, from host 2's second address, and from host 2 by a child process
// started there; each connection arrives from where it was made.
func TestReach(t *testing.T) {
	s := UpAddrs(t, 2, 2)
	h1, h2 := s.Hosts[0], s.Hosts[1]

	var ln net.Listener
	if err := h1.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(h1.Addr.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	peers := echoServer(t, ln)
	addr := ln.Addr().String()

	if back, err := roundTrip(addr, "from root"); err != nil || back != "from root" {
		t.Fatalf("root -> %s (%s): %q, %v", h1.Name, addr, back, err)
	}
	expectPeer(t, peers, s.Root, "the root namespace")

	var back string
	if err := h2.Do(func() (err error) {
		back, err = roundTrip(addr, "from h2")
		return err
	}); err != nil || back != "from h2" {
		t.Fatalf("%s -> %s: %q, %v", h2.Name, addr, back, err)
	}
	expectPeer(t, peers, h2.Addr, h2.Name)

	if err := h2.Do(func() error {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: h2.Addrs[1].AsSlice()}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		t.Fatalf("%s from %v -> %s: %v", h2.Name, h2.Addrs[1], addr, err)
	}
	expectPeer(t, peers, h2.Addrs[1], h2.Name+"'s second address")

	// A child process in host 2: this test binary again, running
	// TestHelperDial, started the way agents are started in a host.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := h2.Command(ctx, os.Args[0], "-test.run=^TestHelperDial$", "-test.v")
	cmd.Env = append(os.Environ(), "NETNSHOST_DIAL="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "echoed: from child") {
		t.Fatalf("child in %s: %v\n%s", h2.Name, err, out)
	}
	expectPeer(t, peers, h2.Addr, "a child process in "+h2.Name)

	// Host 1's loopback is its own: a listener there is not the root
	// namespace's, nor host 2's.
	var lo net.Listener
	if err := h1.Do(func() (err error) {
		lo, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if err := h2.Do(func() error {
		c, err := net.DialTimeout("tcp", lo.Addr().String(), 5*time.Second)
		if err == nil {
			c.Close()
			return errors.New("dialled host 1's loopback listener from host 2")
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("dial host 1's loopback port from host 2: %v, want connection refused", err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// TestHelperDial is not a test: TestReach runs it in a host as a child.
func TestHelperDial(t *testing.T) {
	addr := os.Getenv("NETNSHOST_DIAL")
	if addr == "" {
		t.Skip("helper process of TestReach")
	}
	back, err := roundTrip(addr, "from child")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("echoed:", back)
}

// TestNoWayOut: no host has a default route, so a socket inside one cannot
// even be pointed outside the bridge's /24 (the kernel answers "network is
// unreachable" before sending anything); the only addresses in a host are
// its loopback and its one address; the bridge ports in the root namespace
// have none.
func TestNoWayOut(t *testing.T) {
	s := Up(t, 2)
	outside := []string{
		"udp4:198.51.100.1:53", // TEST-NET-2: anywhere off the bridge
		"tcp4:198.51.100.1:80",
		"udp4:10.203.200.1:53", // another set's subnet is off this bridge too
		"udp6:[2001:db8::1]:53",
	}
	for _, h := range s.Hosts {
		err := h.Do(func() error {
			for _, o := range outside {
				network, addr, _ := strings.Cut(o, ":")
				c, err := net.DialTimeout(network, addr, 5*time.Second)
				if err == nil {
					c.Close()
					return fmt.Errorf("%s %s: dialled, want network unreachable", network, addr)
				}
				if !errors.Is(err, syscall.ENETUNREACH) {
					return fmt.Errorf("%s %s: %v, want network unreachable", network, addr, err)
				}
			}
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			var v4 []string
			for _, ifc := range ifs {
				addrs, _ := ifc.Addrs()
				for _, a := range addrs {
					p := netip.MustParsePrefix(a.String())
					if p.Addr().Is4() {
						v4 = append(v4, ifc.Name+"="+p.String())
					}
				}
			}
			want := fmt.Sprint([]string{"lo=127.0.0.1/8", "eth0=" + h.Addr.String() + "/24"})
			if fmt.Sprint(v4) != want {
				return fmt.Errorf("IPv4 addresses %v, want %v", v4, want)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
	}

	out, err := s.Hosts[0].Command(context.Background(), "ip", "route", "show", "default").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("ip route show default in %s: %q, %v; want nothing", s.Hosts[0].Name, out, err)
	}

	br, err := net.InterfaceByName(s.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	addrs, _ := br.Addrs()
	if len(addrs) == 0 || addrs[0].String() != s.Root.String()+"/24" {
		t.Errorf("bridge %s has %v, want %v/24 first", s.Bridge, addrs, s.Root)
	}
	ifs, _ := net.Interfaces()
	ports := 0
	for _, ifc := range ifs {
		if !strings.HasPrefix(ifc.Name, fmt.Sprintf("stp%dh", s.Number)) {
			continue
		}
		ports++
		if addrs, _ := ifc.Addrs(); len(addrs) != 0 {
			t.Errorf("bridge port %s has addresses %v, want none", ifc.Name, addrs)
		}
	}
	if ports != len(s.Hosts) {
		t.Errorf("%d bridge ports stp%dh*, want %d", ports, s.Number, len(s.Hosts))
	}
}

// TestSysctls: the limits a storm needs are raised inside the hosts, and
// the root namespace's are left as they were.
func TestSysctls(t *testing.T) {
	const portRange = "/proc/sys/net/ipv4/ip_local_port_range"
	before, err := os.ReadFile(portRange)
	if err != nil {
		t.Fatal(err)
	}
	s := Up(t, 1)
	for file, want := range map[string]string{
		portRange:                                "10000\t65535",
		"/proc/sys/net/core/somaxconn":           "65535",
		"/proc/sys/net/ipv4/tcp_max_syn_backlog": "65535",
	} {
		out, err := s.Hosts[0].Command(context.Background(), "cat", file).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("%s in %s: %q, %v; want %q", file, s.Hosts[0].Name, got, err, want)
		}
	}
	after, err := os.ReadFile(portRange)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("root namespace's %s changed from %q to %q", portRange, before, after)
	}
}

// TestScript: up is idempotent (again, it keeps what is there: an open
// listener stays reachable) and a smaller N removes the hosts above it;
// down removes everything and may run again; a failed up removes what it
// made; bad usage exits 2.
func TestScript(t *testing.T) {
	s := Up(t, 3)
	ctx := context.Background()
	var ln net.Listener
	if err := s.Hosts[0].Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(s.Hosts[0].Addr.String(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	echoServer(t, ln)

	again, err := UpSet(ctx, s.Number, 3, 1)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(s) {
		t.Fatalf("up again: %+v, %v; want %+v", again, err, s)
	}
	if back, err := roundTrip(ln.Addr().String(), "still"); err != nil || back != "still" {
		t.Fatalf("after a second up: %q, %v", back, err)
	}

	fewer, err := UpSet(ctx, s.Number, 1, 1)
	if err != nil || len(fewer.Hosts) != 1 || fmt.Sprint(fewer.Hosts[0]) != fmt.Sprint(s.Hosts[0]) {
		t.Fatalf("up 1 after up 3: %+v, %v", fewer, err)
	}
	if _, err := os.Stat("/run/netns/" + s.Hosts[2].Name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after up 1: %v", s.Hosts[2].Name, err)
	}
	if back, err := roundTrip(ln.Addr().String(), "kept"); err != nil || back != "kept" {
		t.Fatalf("host 1 after up 1: %q, %v", back, err)
	}
	// More addresses, then fewer: the first stays, so does the listener.
	more, err := UpSet(ctx, s.Number, 1, 3)
	if err != nil || fmt.Sprint(more.Hosts[0].Addrs) != fmt.Sprint([]netip.Addr{s.Hosts[0].Addr, s.Hosts[0].Addr.Next(), s.Hosts[0].Addr.Next().Next()}) {
		t.Fatalf("up 1 --addrs 3: %+v, %v", more, err)
	}
	if fewer, err := UpSet(ctx, s.Number, 1, 1); err != nil || fmt.Sprint(fewer) != fmt.Sprint(Set{Number: s.Number, Bridge: s.Bridge, Root: s.Root, Hosts: s.Hosts[:1]}) {
		t.Fatalf("up 1 --addrs 1 after --addrs 3: %+v, %v", fewer, err)
	}
	if back, err := roundTrip(ln.Addr().String(), "again"); err != nil || back != "again" {
		t.Fatalf("host 1 after its addresses changed: %q, %v", back, err)
	}

	for range 2 {
		if err := DownSet(ctx, s.Number); err != nil {
			t.Fatal(err)
		}
		if st, err := StatusSet(ctx, s.Number); err != nil || len(st.Hosts) != 0 {
			t.Fatalf("status after down: %+v, %v", st, err)
		}
		if _, err := net.InterfaceByName(s.Bridge); err == nil {
			t.Fatalf("bridge %s still there after down", s.Bridge)
		}
	}

	// A device squatting on the bridge's name that is no bridge makes up
	// fail once the hosts exist (a bridge port needs a bridge); the trap
	// then removes all of it.
	if out, err := exec.Command("ip", "link", "add", s.Bridge, "type", "veth", "peer", "name", fmt.Sprintf("stp%dsq", s.Number)).CombinedOutput(); err != nil {
		t.Fatalf("make a squatter: %v: %s", err, out)
	}
	if _, err := UpSet(ctx, s.Number, 2, 1); err == nil || !strings.Contains(err.Error(), "up failed") || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("up over a squatter: %v, want exit status 1 and \"up failed\"", err)
	}
	for _, h := range s.Hosts {
		if _, err := os.Stat("/run/netns/" + h.Name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind by a failed up: %v", h.Name, err)
		}
	}
	if _, err := net.InterfaceByName(s.Bridge); err == nil {
		t.Errorf("%s left behind by a failed up", s.Bridge)
	}

	for _, args := range [][]string{
		{}, {"up"}, {"up", "0"}, {"up", "201"}, {"up", "x"}, {"up", "2", "--set", "100"},
		{"up", "2", "--addrs", "0"}, {"up", "100", "--addrs", "3"}, {"down", "--addrs", "2"},
		{"down", "extra"}, {"status", "--set"}, {"restart"},
	} {
		_, err := script(ctx, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("hosts.sh %q: %v, want exit status 2", args, err)
		}
	}
}
