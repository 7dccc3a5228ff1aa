package listener

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestListenerNoKeepAlive: an accepted connection has no TCP keep-alive
// (Go's default would probe every idle connection every 15 s) and has
// TCP_NODELAY; the listener has the backlog asked for, on both families.
func TestListenerNoKeepAlive(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := Listen(addr, 7)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if got := backlogOf(t, l); got != 7 {
			t.Errorf("%s: kernel backlog %d, want 7", addr, got)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		nc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		raw, err := nc.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var ka, nodelay int
		var kerr, nerr error
		if err := raw.Control(func(fd uintptr) {
			ka, kerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			nodelay, nerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
		}); err != nil || kerr != nil || nerr != nil {
			t.Fatal(err, kerr, nerr)
		}
		if ka != 0 {
			t.Errorf("%s: accepted connection has SO_KEEPALIVE %d, want 0", addr, ka)
		}
		if nodelay == 0 {
			t.Errorf("%s: accepted connection has no TCP_NODELAY", addr)
		}
	}
}

// backlogOf reads a listener's backlog from the kernel: TCP_INFO's
// tcpi_sacked holds sk_max_ack_backlog for a listening socket.
func backlogOf(t *testing.T, l *Listener) int {
	t.Helper()
	var info *unix.TCPInfo
	var ierr error
	if err := l.raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		t.Fatal(err, ierr)
	}
	return int(info.Sacked)
}

func TestListenErrors(t *testing.T) {
	l, err := Listen("127.0.0.1:0", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Listen("127.0.0.1:0", 0); err == nil {
		t.Fatal("backlog 0 accepted")
	}
	// Two listeners on one port form an SO_REUSEPORT group.
	l2, err := Listen(l.Addr().String(), 8)
	if err != nil {
		t.Fatalf("second listener on %s: %v", l.Addr(), err)
	}
	l2.Close()
}
