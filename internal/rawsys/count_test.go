package rawsys

import (
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCounts: n connects to a real listener, each a socket, a connect and
// a close, count at least n of each kind (other tests of the process may
// add more), and a kind the loop never made is not counted by it.
func TestCounts(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sa := NewSockaddr(netip.MustParseAddrPort(ln.Addr().String()), unix.AF_INET)
	const n = 50
	before := Counts()
	for range n {
		fd, errno := Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if errno != 0 {
			t.Fatal(errno)
		}
		if errno := Connect(fd, &sa); errno != 0 && errno != unix.EINPROGRESS {
			t.Fatalf("connect: %v", errno)
		}
		if errno := Abort(fd); errno != 0 {
			t.Fatalf("abort: %v", errno)
		}
	}
	after := Counts()
	for _, k := range []string{"socket", "connect", "setsockopt", "close"} {
		if d := after[k] - before[k]; d < n {
			t.Errorf("%s: %d counted for %d calls", k, d, n)
		}
	}
	if len(Names) != int(NumKinds) {
		t.Errorf("%d names for %d kinds", len(Names), NumKinds)
	}
}

// BenchmarkNote is what counting adds to each call: one atomic add on a
// cache line of the kind's own.
func BenchmarkNote(b *testing.B) {
	for range b.N {
		Note(SysConnect)
	}
}

// BenchmarkNoteParallel is the same from every P at once, on one kind:
// the worst case, every reactor counting the same call at the same time.
func BenchmarkNoteParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Note(SysConnect)
		}
	})
}

// BenchmarkSocketClose is the cheapest pair of counted calls, a socket
// opened and closed (two Notes), to set the Notes against.
func BenchmarkSocketClose(b *testing.B) {
	for range b.N {
		fd, errno := Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if errno != 0 {
			b.Fatal(errno)
		}
		Close(fd)
	}
}
