package rawsys

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSockaddrLayout: the encoded address is what the kernel reads back
// from getsockname after a bind, for both families.
func TestSockaddrLayout(t *testing.T) {
	for _, c := range []struct {
		ap     string
		family int
	}{{"127.0.0.7:0", unix.AF_INET}, {"[::1]:0", unix.AF_INET6}} {
		ap := netip.MustParseAddrPort(c.ap)
		fd, errno := Socket(c.family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		defer Close(fd)
		sa := NewSockaddr(ap, c.family)
		if errno := Bind(fd, &sa); errno != 0 {
			t.Fatalf("bind %s: %v", ap, errno)
		}
		got, err := unix.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		switch g := got.(type) {
		case *unix.SockaddrInet4:
			if netip.AddrFrom4(g.Addr) != ap.Addr() || g.Port == 0 {
				t.Errorf("bound %s, getsockname %v:%d", ap, g.Addr, g.Port)
			}
		case *unix.SockaddrInet6:
			if netip.AddrFrom16(g.Addr) != ap.Addr() || g.Port == 0 {
				t.Errorf("bound %s, getsockname %v:%d", ap, g.Addr, g.Port)
			}
		}
	}
	// The port goes in network byte order.
	sa := NewSockaddr(netip.MustParseAddrPort("10.0.0.1:7182"), unix.AF_INET)
	if b := (*[4]byte)(unsafe.Pointer(&sa.raw))[2:4]; b[0] != 7182>>8 || b[1] != 7182&0xff {
		t.Errorf("port bytes %v, want [%d %d]", b, 7182>>8, 7182&0xff)
	}
}

// dialLoopback starts a non-blocking connect of a raw socket to a new
// loopback listener, which the test's end closes; the socket is the
// caller's to close.
func dialLoopback(t *testing.T) (net.Listener, int) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fd, errno := Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if errno != 0 {
		t.Fatal(errno)
	}
	sa := NewSockaddr(netip.MustParseAddrPort(ln.Addr().String()), unix.AF_INET)
	if errno := Connect(fd, &sa); errno != 0 && errno != unix.EINPROGRESS {
		t.Fatalf("connect: %v", errno)
	}
	return ln, fd
}

// TestConnectReadWriteClose: a non-blocking connect, a write and a read
// through the raw calls, against a real listener; EAGAIN when empty.
func TestConnectReadWriteClose(t *testing.T) {
	ln, fd := dialLoopback(t)
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if _, err := unix.Poll(pfd, 5000); err != nil {
		t.Fatal(err)
	}
	if v, errno := GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); errno != 0 || v != 0 {
		t.Fatalf("SO_ERROR %d, %v", v, errno)
	}
	if errno := SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); errno != 0 {
		t.Fatal(errno)
	}
	if v, _ := GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); v != 1 {
		t.Errorf("TCP_NODELAY %d after setting it", v)
	}
	buf := make([]byte, 16)
	if n, errno := Read(fd, buf); n != -1 || errno != unix.EAGAIN {
		t.Errorf("Read of an empty socket = %d, %v; want -1, EAGAIN", n, errno)
	}
	if n, errno := Write(fd, []byte("ping")); n != 4 || errno != 0 {
		t.Fatalf("Write = %d, %v", n, errno)
	}
	got := make([]byte, 4)
	peer.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(got); err != nil || !bytes.Equal(got, []byte("ping")) {
		t.Fatalf("peer read %q, %v", got, err)
	}
	peer.Write([]byte("pong"))
	pfd = []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	unix.Poll(pfd, 5000)
	if n, errno := Read(fd, buf); n != 4 || errno != 0 || string(buf[:4]) != "pong" {
		t.Errorf("Read = %d, %v, %q", n, errno, buf[:max(n, 0)])
	}
	if errno := Close(fd); errno != 0 {
		t.Fatal(errno)
	}
	if errno := Close(fd); errno != unix.EBADF {
		t.Errorf("second Close = %v, want EBADF", errno)
	}
}

// TestAcceptRecv: Accept4 on a real listener gives EAGAIN with nothing
// queued, then the connection with its peer's address (IPv4 and IPv6);
// Recv peeks without consuming and reads 0 at the peer's FIN.
func TestAcceptRecv(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "tcp6" {
				addr = "[::1]:0"
			}
			ln, err := net.Listen(network, addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer ln.Close()
			raw, err := ln.(*net.TCPListener).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			accept := func() (fd int, peer netip.AddrPort, errno unix.Errno) {
				raw.Control(func(l uintptr) { fd, peer, errno = Accept4(int(l), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) })
				return
			}
			if fd, _, errno := accept(); fd != -1 || errno != unix.EAGAIN {
				t.Fatalf("Accept4 with nothing queued = %d, %v; want -1, EAGAIN", fd, errno)
			}
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write([]byte("hi"))
			var fd int
			var peer netip.AddrPort
			var errno unix.Errno
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if fd, peer, errno = accept(); errno != unix.EAGAIN || time.Now().After(deadline) {
					break
				}
			}
			if errno != 0 {
				t.Fatalf("Accept4: %v", errno)
			}
			defer Close(fd)
			if want := netip.MustParseAddrPort(c.LocalAddr().String()); peer != want {
				t.Errorf("peer %v, want the dialer's %v", peer, want)
			}
			if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
				t.Errorf("accepted fd flags %#x, %v: want O_NONBLOCK", fl, err)
			}
			buf := make([]byte, 8)
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			unix.Poll(pfd, 5000)
			if n, errno := Recv(fd, buf, unix.MSG_PEEK|unix.MSG_DONTWAIT); n != 2 || errno != 0 {
				t.Fatalf("Recv(MSG_PEEK) = %d, %v; want 2", n, errno)
			}
			if n, errno := Read(fd, buf); n != 2 || errno != 0 || string(buf[:2]) != "hi" {
				t.Fatalf("Read after the peek = %d, %v, %q", n, errno, buf[:max(n, 0)])
			}
			if n, errno := Recv(fd, buf, unix.MSG_PEEK|unix.MSG_DONTWAIT); n != -1 || errno != unix.EAGAIN {
				t.Errorf("Recv of an empty socket = %d, %v; want -1, EAGAIN", n, errno)
			}
			c.Close()
			unix.Poll(pfd, 5000)
			if n, errno := Recv(fd, buf[:1], unix.MSG_PEEK|unix.MSG_DONTWAIT); n != 0 || errno != 0 {
				t.Errorf("Recv after the peer's FIN = %d, %v; want 0", n, errno)
			}
		})
	}
}

// TestWritevPoll: Writev writes every buffer in order (empty ones
// skipped) through one call; Poll says, without waiting, when a socket is
// readable, and not before.
func TestWritevPoll(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	unix.SetNonblock(fd, true)
	if rev, errno := Poll(fd, unix.POLLIN); rev != 0 || errno != 0 {
		t.Fatalf("Poll of a socket with nothing to read = %#x, %v; want 0", rev, errno)
	}
	if rev, errno := Poll(fd, unix.POLLOUT); rev&unix.POLLOUT == 0 || errno != 0 {
		t.Fatalf("Poll(POLLOUT) of an empty socket = %#x, %v; want POLLOUT", rev, errno)
	}
	if n, errno := Writev(fd, [][]byte{[]byte("ab"), nil, []byte("cde")}); n != 5 || errno != 0 {
		t.Fatalf("Writev = %d, %v; want 5", n, errno)
	}
	got := make([]byte, 5)
	peer.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != "abcde" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	peer.Write([]byte("x"))
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	unix.Poll(pfd, 5000)
	if rev, errno := Poll(fd, unix.POLLIN); rev&unix.POLLIN == 0 || errno != 0 {
		t.Fatalf("Poll with a byte to read = %#x, %v; want POLLIN", rev, errno)
	}
}

// TestSendAcked: no report before the byte is sent; once the peer's kernel
// has acknowledged it, one report waits in the error queue (POLLERR), the
// byte reaches the peer, and the queue is empty after it.
func TestSendAcked(t *testing.T) {
	ln, fd := dialLoopback(t)
	defer Close(fd)
	if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 5000); err != nil {
		t.Fatal(err)
	}
	if ok, errno := AckReported(fd); ok || errno != unix.EAGAIN {
		t.Fatalf("AckReported before a send = %v, %v; want false, EAGAIN", ok, errno)
	}
	if errno := SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_OPT_TSONLY); errno != 0 {
		t.Fatal(errno)
	}
	if errno := SendAcked(fd, 0x16); errno != 0 {
		t.Fatalf("SendAcked: %v", errno)
	}
	pfd := []unix.PollFd{{Fd: int32(fd)}} // POLLERR is reported whatever is asked
	if _, err := unix.Poll(pfd, 5000); err != nil || pfd[0].Revents&unix.POLLERR == 0 {
		t.Fatalf("poll = %#x, %v; want POLLERR", pfd[0].Revents, err)
	}
	if ok, errno := AckReported(fd); !ok {
		t.Fatalf("AckReported after the peer's ACK = false, %v", errno)
	}
	if ok, errno := AckReported(fd); ok || errno != unix.EAGAIN {
		t.Errorf("a second AckReported = %v, %v; want false, EAGAIN", ok, errno)
	}
	if v, _ := GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); v != 0 {
		t.Errorf("SO_ERROR %d after the report", v)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peer.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 2)
	if n, err := peer.Read(b); n != 1 || err != nil || b[0] != 0x16 {
		t.Errorf("peer read %d %x, %v; want the one byte 16", n, b[:n], err)
	}
}
