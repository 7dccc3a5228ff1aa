package loadgen

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDialerNoDelayOnceConnected: a socket gets TCP_NODELAY when it is
// connected and the mode sends frames, not on every attempt, and not in a
// mode that sends none.
func TestDialerNoDelayOnceConnected(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dst := netip.MustParseAddrPort(ln.Addr().String())
	for _, noDelay := range []bool{true, false} {
		d := newDialer(dst, nil, 0, noDelay)
		fd, op, errno := d.connect(1)
		if errno != 0 {
			t.Fatalf("connect: %s: %v", op, errno)
		}
		defer unix.Close(fd)
		if got := noDelayOf(t, fd); got != 0 {
			t.Errorf("noDelay %v: TCP_NODELAY %d before the connect completed, want 0", noDelay, got)
		}
		waitWritable(t, fd)
		if errno := soError(fd); errno != 0 {
			t.Fatalf("connect: %v", errno)
		}
		if errno := d.established(fd); errno != 0 {
			t.Fatalf("established: %v", errno)
		}
		want := 0
		if noDelay {
			want = 1
		}
		if got := noDelayOf(t, fd); got != want {
			t.Errorf("noDelay %v: TCP_NODELAY %d once connected, want %d", noDelay, got, want)
		}
	}
}

func noDelayOf(t *testing.T, fd int) int {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func waitWritable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, int(5*time.Second/time.Millisecond)); err != nil || n != 1 {
		t.Fatalf("poll: %d, %v", n, err)
	}
}
