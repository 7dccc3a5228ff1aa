package rawsys

import (
	"bytes"
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

// TestConnectReadWriteClose: a non-blocking connect, a write and a read
// through the raw calls, against a real listener; EAGAIN when empty.
func TestConnectReadWriteClose(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fd, errno := Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if errno != 0 {
		t.Fatal(errno)
	}
	sa := NewSockaddr(netip.MustParseAddrPort(ln.Addr().String()), unix.AF_INET)
	if errno := Connect(fd, &sa); errno != 0 && errno != unix.EINPROGRESS {
		t.Fatalf("connect: %v", errno)
	}
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
