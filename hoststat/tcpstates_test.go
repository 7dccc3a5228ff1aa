package hoststat

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/testenv"
	"github.com/stampede-dev/stampede/results"
)

func TestCountTCPStates(t *testing.T) {
	// A listener on 8080 (0x1F90), one accepted connection, a client's
	// connection to it, a SYN_RECV request, and a TIME_WAIT elsewhere.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:1F90 0200007F:9C41 03 00000000:00000000 02:00000066 00000000     0        0 0 0 0000000000000000
   4: 0100007F:0050 0100007F:9C42 06 00000000:00000000 03:000016A8 00000000     0        0 0 3 0000000000000000
`
	var local, remote TCPStates
	if err := CountTCPStates(strings.NewReader(table), 8080, 8080, &local, &remote); err != nil {
		t.Fatal(err)
	}
	if want := (TCPStates{1: 1, 3: 1, 10: 1}); local != want {
		t.Errorf("local %v, want %v", local, want)
	}
	if want := (TCPStates{1: 1}); remote != want {
		t.Errorf("remote %v, want %v", remote, want)
	}
	for _, bad := range []string{"h\n 0: 0100007F 00000000:0000 0A\n", "h\n 0: 0100007F:XYZ 00000000:0000 0A\n", "h\n 0:\n"} {
		if err := CountTCPStates(strings.NewReader(bad), 1, 1, &local, &remote); err == nil {
			t.Errorf("CountTCPStates(%q) succeeded", bad)
		}
	}
	if n := TCPStateNames(); len(n) != 11 || n[0] != "established" || n[9] != "listen" {
		t.Errorf("names %v", n)
	}
}

// Real loopback sockets: sock_diag and /proc agree, per side.
func TestPortTCPStates(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	var clients, servers []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		clients, servers = append(clients, c), append(servers, s)
	}
	defer func() {
		for i := range clients {
			clients[i].Close()
			servers[i].Close()
		}
	}()
	// Only ESTABLISHED and LISTEN are ours: the port may have TIME_WAIT
	// sockets of an earlier connection that used it.
	ours := func(s TCPStates) [2]int { return [2]int{s[1], s[10]} }
	want := [2][2]int{{3, 1}, {3, 0}}
	for name, f := range map[string]func(uint16, uint16) (TCPStates, TCPStates, error){"sock_diag": diagTCPStates, "proc": procTCPStates, "PortTCPStates": PortTCPStates} {
		l, r, err := f(port, port)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := [2][2]int{ours(l), ours(r)}; got != want {
			t.Errorf("%s: local %v remote %v, want established/listen %v", name, l, r, want)
		}
	}
}

func TestSamplerCountsTCP(t *testing.T) {
	s := NewSampler(time.Second, func() map[string][]int32 {
		return map[string][]int32{results.RoleTarget: nil, results.RoleLoadgen: nil}
	})
	s.tcp = func() map[string]PortSockets {
		return map[string]PortSockets{results.RoleTarget: {States: TCPStates{1: 5, 10: 1}, MemBytes: 5000},
			results.RoleLoadgen: {States: TCPStates{1: 5, 2: 7}, MemBytes: 0}}
	}
	s.Sample()
	var b strings.Builder
	if err := WriteResourcesCSV(&b, time.Now(), s.Samples()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], ",5,7,0,0,0,0,0,0,0,0,0") || !strings.HasSuffix(lines[2], ",5,0,0,0,0,0,0,0,0,1,0") {
		t.Errorf("resources.csv:\n%s", b.String())
	}
	tg := s.Stats()[results.RoleTarget]
	if tg.PeakConns != 5 || tg.PeakSocketMemBytes != 5000 || tg.SocketMemPerConnBytes != 1000 {
		t.Errorf("target stats %+v: want 5 connections, 5000 socket bytes, 1000 per connection", tg)
	}
	s.CountTCP(1, 1) // the real counter installs and runs
	s.Sample()
}

// Real loopback sockets: bytes a peer sent and nobody read are charged to
// the receiving side's sockets, and sock_diag reports them per side.
func TestPortSocketsMemory(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const n = 64 << 10
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	// The bytes reach the server's receive queue asynchronously: read the
	// figures until they show (loopback delivers them at once in practice).
	var local, remote PortSockets
	for range 100 {
		if local, remote, err = diagPortSockets(port, port); err != nil {
			testenv.SkipUnlessRequired(t, "sock_diag: %v", err)
		}
		if local.MemBytes >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if local.States[1] != 1 || remote.States[1] != 1 {
		t.Fatalf("established: local %d remote %d, want 1 and 1", local.States[1], remote.States[1])
	}
	if local.MemBytes < n {
		t.Errorf("server side holds %d bytes of socket memory, want at least the %d unread bytes", local.MemBytes, n)
	}
	t.Logf("socket memory: server side %d B, client side %d B", local.MemBytes, remote.MemBytes)
}
