package loadgen

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// dialer opens raw non-blocking TCP sockets for one reactor, through raw
// system calls (internal/rawsys); its addresses are encoded once, when it
// is made, and only read after.
type dialer struct {
	family     int
	dst        rawsys.Sockaddr
	src        []rawsys.Sockaddr // round-robin by client ID; empty: the kernel's choice
	synRetries int
	noDelay    bool
}

func newDialer(dst netip.AddrPort, src []netip.Addr, synRetries int, noDelay bool) *dialer {
	d := &dialer{family: unix.AF_INET, synRetries: synRetries, noDelay: noDelay}
	if !dst.Addr().Unmap().Is4() {
		d.family = unix.AF_INET6
	}
	d.dst = rawsys.NewSockaddr(dst, d.family)
	for _, ip := range src {
		d.src = append(d.src, rawsys.NewSockaddr(netip.AddrPortFrom(ip, 0), d.family))
	}
	return d
}

// connect opens a socket for client id and starts a non-blocking connect.
// It returns the socket and the errno of the first step that failed (0 when
// the connect is in progress or done); on failure the socket is closed and
// op names the step.
func (d *dialer) connect(id uint32) (fd int, op string, errno unix.Errno) {
	fd, errno = rawsys.Socket(d.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if errno != 0 {
		return -1, "socket", errno
	}
	fail := func(op string, errno unix.Errno) (int, string, unix.Errno) {
		rawsys.Close(fd)
		return -1, op, errno
	}
	if d.synRetries > 0 {
		if errno := rawsys.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_SYNCNT, d.synRetries); errno != 0 {
			return fail("setsockopt TCP_SYNCNT", errno)
		}
	}
	if len(d.src) > 0 {
		// Without IP_BIND_ADDRESS_NO_PORT, bind takes a port for every
		// destination and the source address gains nothing.
		if errno := rawsys.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); errno != 0 {
			return fail("setsockopt IP_BIND_ADDRESS_NO_PORT", errno)
		}
		if errno := rawsys.Bind(fd, &d.src[int(id)%len(d.src)]); errno != 0 {
			return fail("bind", errno)
		}
	}
	if errno := rawsys.Connect(fd, &d.dst); errno != 0 && errno != unix.EINPROGRESS {
		return fail("connect", errno)
	}
	return fd, "", 0
}

// established sets what a connected socket needs (TCP_NODELAY, when the
// mode sends frames): once connected, not before, so that the attempts a
// herd wastes do not pay for it.
func (d *dialer) established(fd int) unix.Errno {
	if !d.noDelay {
		return 0
	}
	return rawsys.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
}

// soError reads and clears a socket's pending error: the outcome of a
// non-blocking connect.
func soError(fd int) unix.Errno {
	v, errno := rawsys.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if errno != 0 {
		return errno
	}
	return unix.Errno(v)
}

// toErrno extracts the errno of a failed system call.
func toErrno(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EINVAL
}
