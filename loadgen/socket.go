package loadgen

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// dialer opens raw non-blocking TCP sockets for one reactor. Sockaddr
// values are private to it: unix.Sockaddr encodes itself into its own
// fields, so sharing one between reactors would race.
type dialer struct {
	family     int
	dst        unix.Sockaddr
	src        []unix.Sockaddr // round-robin by client ID; empty: the kernel's choice
	synRetries int
	noDelay    bool
}

func newDialer(dst netip.AddrPort, src []netip.Addr, synRetries int, noDelay bool) *dialer {
	d := &dialer{family: unix.AF_INET, synRetries: synRetries, noDelay: noDelay}
	if !dst.Addr().Unmap().Is4() {
		d.family = unix.AF_INET6
	}
	d.dst = sockaddr(dst, d.family)
	for _, ip := range src {
		d.src = append(d.src, sockaddr(netip.AddrPortFrom(ip, 0), d.family))
	}
	return d
}

func sockaddr(ap netip.AddrPort, family int) unix.Sockaddr {
	if family == unix.AF_INET {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// connect opens a socket for client id and starts a non-blocking connect.
// It returns the socket and the errno of the first step that failed (0 when
// the connect is in progress or done); on failure the socket is closed and
// op names the step.
func (d *dialer) connect(id uint32) (fd int, op string, errno unix.Errno) {
	fd, err := unix.Socket(d.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, "socket", toErrno(err)
	}
	fail := func(op string, err error) (int, string, unix.Errno) {
		unix.Close(fd)
		return -1, op, toErrno(err)
	}
	if d.synRetries > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_SYNCNT, d.synRetries); err != nil {
			return fail("setsockopt TCP_SYNCNT", err)
		}
	}
	if len(d.src) > 0 {
		// Without IP_BIND_ADDRESS_NO_PORT, bind takes a port for every
		// destination and the source address gains nothing.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
			return fail("setsockopt IP_BIND_ADDRESS_NO_PORT", err)
		}
		if err := unix.Bind(fd, d.src[int(id)%len(d.src)]); err != nil {
			return fail("bind", err)
		}
	}
	err = unix.Connect(fd, d.dst)
	if err != nil && err != unix.EINPROGRESS {
		return fail("connect", err)
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
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return toErrno(err)
	}
	return 0
}

// soError reads and clears a socket's pending error: the outcome of a
// non-blocking connect.
func soError(fd int) unix.Errno {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return toErrno(err)
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
