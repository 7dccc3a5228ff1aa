// Package rawsys makes the socket calls of the epoll reactors (loadgen,
// target) and of the target's accept loop as raw system calls: calls on non-blocking sockets that return
// at once, so the Go runtime need not be told the thread entered the
// kernel.
//
// A call through golang.org/x/sys/unix enters the runtime's syscall state
// (entersyscall): if every P of the process was idle, sysmon slept, and
// that call wakes it to watch the thread every 20 µs for a millisecond or
// more. A reactor wakes, makes its calls and parks again (internal/epoll),
// so through unix every wake-up woke sysmon too; the 28 processes of a
// 250,000-client run on two cores spent a tenth of the CPU of a herd on
// it (lab/records/measurements.md). None of these calls may block: every socket is
// non-blocking, and close of a TCP socket without SO_LINGER returns at
// once.
package rawsys

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sockaddr is an IPv4 or IPv6 socket address in the kernel's layout,
// encoded once and passed to bind and connect as it is.
type Sockaddr struct {
	raw unix.RawSockaddrInet6 // the larger of the two; an IPv4 one is a prefix
	n   uint32
}

// NewSockaddr encodes ap; an IPv4-mapped IPv6 address stays IPv6 unless
// family is unix.AF_INET.
func NewSockaddr(ap netip.AddrPort, family int) Sockaddr {
	var sa Sockaddr
	if family == unix.AF_INET {
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw))
		p.Family = unix.AF_INET
		p.Port = htons(ap.Port())
		p.Addr = ap.Addr().Unmap().As4()
		sa.n = unix.SizeofSockaddrInet4
		return sa
	}
	sa.raw.Family = unix.AF_INET6
	sa.raw.Port = htons(ap.Port())
	sa.raw.Addr = ap.Addr().As16()
	sa.n = unix.SizeofSockaddrInet6
	return sa
}

func htons(v uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&v))
	b[0], b[1] = byte(v>>8), byte(v)
	return v
}

// Socket opens a socket.
func Socket(domain, typ, proto int) (int, unix.Errno) {
	Note(SysSocket)
	r, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
	return int(r), e
}

// Bind binds fd to sa.
func Bind(fd int, sa *Sockaddr) unix.Errno {
	Note(SysBind)
	_, _, e := unix.RawSyscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa.raw)), uintptr(sa.n))
	return e
}

// Connect starts a connect of fd to sa (EINPROGRESS on a non-blocking
// socket).
func Connect(fd int, sa *Sockaddr) unix.Errno {
	Note(SysConnect)
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa.raw)), uintptr(sa.n))
	return e
}

// SetsockoptInt sets an int socket option.
func SetsockoptInt(fd, level, opt, v int) unix.Errno {
	Note(SysSetsockopt)
	iv := int32(v)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&iv)), 4, 0)
	return e
}

// GetsockoptInt reads an int socket option.
func GetsockoptInt(fd, level, opt int) (int, unix.Errno) {
	Note(SysGetsockopt)
	var iv int32
	n := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&iv)), uintptr(unsafe.Pointer(&n)), 0)
	return int(iv), e
}

// Read reads from a non-blocking fd: n < 0 with the errno on failure
// (EAGAIN when nothing is there).
func Read(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	Note(SysRead)
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// Write writes to a non-blocking fd: n < 0 with the errno on failure
// (EAGAIN when the socket buffer is full).
func Write(fd int, p []byte) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	Note(SysWrite)
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// Close closes fd.
func Close(fd int) unix.Errno {
	Note(SysClose)
	_, _, e := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	return e
}

// Abort closes the TCP socket fd with a reset (SO_LINGER on, 0 s): the
// socket is freed at once and leaves no FIN_WAIT or TIME_WAIT behind, on
// either end of the connection. For a socket whose peer has already gone
// (it closed first, or never accepted the connection), where a FIN would
// only keep both ends' sockets in the kernel's tables.
func Abort(fd int) unix.Errno {
	l := unix.Linger{Onoff: 1, Linger: 0}
	Note(SysSetsockopt)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_LINGER,
		uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	if c := Close(fd); c != 0 {
		return c
	}
	return e
}

// Accept4 accepts a connection on the non-blocking listener fd with flags
// (unix.SOCK_NONBLOCK, unix.SOCK_CLOEXEC) and returns its fd and the
// peer's address (EAGAIN when none is queued).
func Accept4(fd, flags int) (int, netip.AddrPort, unix.Errno) {
	Note(SysAccept4)
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&n)), uintptr(flags), 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	return int(r), addrPort(&rsa), 0
}

// addrPort decodes an IPv4 or IPv6 socket address; the zero AddrPort for
// another family.
func addrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), ntohs(p.Port))
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom16(p.Addr), ntohs(p.Port))
	}
	return netip.AddrPort{}
}

func ntohs(v uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&v))
	return uint16(b[0])<<8 | uint16(b[1])
}

// Recv reads from a non-blocking fd with recvfrom's flags (unix.MSG_PEEK,
// unix.MSG_DONTWAIT): n < 0 with the errno on failure, 0 at the peer's
// FIN.
func Recv(fd int, p []byte, flags int) (int, unix.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	Note(SysRecvfrom)
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		uintptr(flags), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// Writev writes bufs to a non-blocking fd with one writev: n < 0 with the
// errno on failure (EAGAIN when the socket buffer is full).
func Writev(fd int, bufs [][]byte) (int, unix.Errno) {
	var iov [8]unix.Iovec
	vs := iov[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(vs) == len(iov) {
			break // the rest at the caller's next call
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return 0, 0
	}
	Note(SysWritev)
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vs[0])), uintptr(len(vs)))
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// Poll reports, without waiting, which of events (unix.POLLIN,
// unix.POLLOUT) fd is ready for, with POLLHUP and POLLERR: ppoll with a
// zero timeout.
func Poll(fd int, events int16) (int16, unix.Errno) {
	Note(SysPpoll)
	pfd := unix.PollFd{Fd: int32(fd), Events: events}
	var ts unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 || n == 0 {
		return 0, e
	}
	return pfd.Revents, 0
}

// SendAcked writes the one byte b to the connected TCP socket fd and asks
// the kernel to report when the peer has acknowledged it: a timestamp
// (SOF_TIMESTAMPING_TX_ACK, requested for this write alone) then waits in
// the socket's error queue, and epoll reports EPOLLERR (AckReported reads
// it). A peer's kernel acknowledges data only on a socket it has made,
// so the report says the server took the connection into its accept
// queue. EINVAL where the kernel takes no such request on a write.
func SendAcked(fd int, b byte) unix.Errno {
	Note(SysSendmsg)
	var cmsg struct { // one control message: its header, then an int padded to CMSG_SPACE
		h     unix.Cmsghdr
		flags uint32
		_     uint32
	}
	cmsg.h.Level, cmsg.h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPING
	cmsg.h.SetLen(unix.CmsgLen(4))
	cmsg.flags = unix.SOF_TIMESTAMPING_TX_ACK
	iov := unix.Iovec{Base: &b}
	iov.SetLen(1)
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: (*byte)(unsafe.Pointer(&cmsg))}
	msg.SetControllen(unix.CmsgSpace(4))
	_, _, e := unix.RawSyscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_NOSIGNAL)
	return e
}

// AckReported takes one report from fd's error queue without waiting: true
// when there was one (SendAcked's acknowledgement), false with EAGAIN when
// the queue is empty.
func AckReported(fd int) (bool, unix.Errno) {
	Note(SysRecvmsg)
	var (
		b    [1]byte
		cmsg [16]uint64 // aligned for the control messages' headers
	)
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: (*byte)(unsafe.Pointer(&cmsg[0]))}
	msg.SetControllen(int(unsafe.Sizeof(cmsg)))
	_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
	return e == 0, e
}
