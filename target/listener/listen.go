package listener

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-dev/stampede/internal/rawsys"
	"github.com/stampede-dev/stampede/spec"
	"golang.org/x/sys/unix"
)

// Listener is a TCP listener whose accept backlog is chosen by the caller,
// not by net.core.somaxconn as with net.Listen (golang/go#39000), and can be
// changed while it listens. Its socket has SO_REUSEADDR and SO_REUSEPORT, so
// several processes listening on the same address form one SO_REUSEPORT
// group and the kernel spreads new connections over them.
//
// Its connections have no TCP keep-alive: the WebSocket pings find a dead
// peer, and Go's default (a probe after 15 s idle, every 15 s) would have
// the kernel probe each idle connection four times a minute, about 66,000
// probes and their ACKs a second on loopback at a million connections,
// besides four setsockopt calls per accept.
//
// They have TCP_NODELAY, as Go's own accepted connections do: it is set
// on the listening socket, and Linux gives it to every connection the
// listener accepts, so the accept loop's raw accepts need no setsockopt.
//
// The kernel caps the backlog at net.core.somaxconn and holds backlog+1
// established connections in the accept queue; `ss -ltn` shows the queue as
// Recv-Q and the backlog as Send-Q.
type Listener struct {
	*net.TCPListener
	raw     syscall.RawConn
	backlog atomic.Int64
	// polled is a duplicate of the listening socket that the runtime's
	// poller watches as a file, for AcceptFD to park on: a TCPListener's
	// RawConn cannot wait for a connection. Close and SetDeadline act on
	// both.
	polled    *os.File
	polledRaw syscall.RawConn
}

// Listen listens on addr ("IP:port"; port 0 picks a free port; an IPv6 host
// is bracketed, "[::1]:0") with the given backlog, which must be positive.
// "localhost" is taken as 127.0.0.1.
func Listen(addr string, backlog int) (*Listener, error) {
	if backlog <= 0 {
		return nil, fmt.Errorf("target: listen %s: backlog %d must be positive", addr, backlog)
	}
	ap, err := parseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	network := "tcp4"
	if !ap.Addr().Is4() {
		network = "tcp6" // Go makes it IPv6-only
	}
	var optErr error
	lc := net.ListenConfig{
		KeepAlive: -1,
		Control: func(_, _ string, c syscall.RawConn) error {
			err := c.Control(func(fd uintptr) {
				optErr = groupSockopts(int(fd), network == "tcp6")
				if optErr == nil {
					optErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
				}
			})
			return errors.Join(err, optErr)
		},
	}
	// net.Listen's backlog is somaxconn; listen() again below sets ours
	// before the first accept, which is all the kernel needs.
	nl, err := lc.Listen(context.Background(), network, ap.String())
	if err != nil {
		return nil, fmt.Errorf("target: listen %s: %w", addr, err)
	}
	tl := nl.(*net.TCPListener)
	raw, err := tl.SyscallConn()
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("target: listen %s: %w", addr, err)
	}
	l := &Listener{TCPListener: tl, raw: raw}
	if err := l.poll(); err != nil {
		tl.Close()
		return nil, fmt.Errorf("target: listen %s: %w", addr, err)
	}
	if err := l.SetBacklog(backlog); err != nil {
		l.Close()
		return nil, fmt.Errorf("target: listen %s: %w", addr, err)
	}
	return l, nil
}

// poll makes l.polled: the listening socket duplicated (non-blocking like
// the original, whose open file it shares) and handed to the runtime's
// poller by os.NewFile.
func (l *Listener) poll() error {
	fd, derr := -1, error(nil)
	err := l.raw.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) })
	if err = errors.Join(err, derr); err != nil {
		return fmt.Errorf("dup: %w", err)
	}
	l.polled = os.NewFile(uintptr(fd), "listener")
	if l.polledRaw, err = l.polled.SyscallConn(); err != nil {
		l.polled.Close()
		return err
	}
	return nil
}

// Close stops listening: both descriptors of the socket are closed, and a
// waiting Accept or AcceptFD returns.
func (l *Listener) Close() error {
	return errors.Join(l.polled.Close(), l.TCPListener.Close())
}

// SetDeadline sets the deadline of Accept and AcceptFD; a deadline in the
// past interrupts them.
func (l *Listener) SetDeadline(t time.Time) error {
	return errors.Join(l.polled.SetDeadline(t), l.TCPListener.SetDeadline(t))
}

// SetBacklog changes the accept backlog of the listening socket. Linux
// accepts listen() again on a listening socket and only updates its backlog;
// connections already queued stay queued. n is checked where it enters
// (Listen, Server.SetBacklog), once.
func (l *Listener) SetBacklog(n int) error {
	var lerr error
	err := l.raw.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), n) })
	if err = errors.Join(err, lerr); err != nil {
		return fmt.Errorf("target: set backlog %d: %w", n, err)
	}
	l.backlog.Store(int64(n))
	return nil
}

// DeferAccept makes the kernel keep a connection out of the accept queue
// until its first bytes come (TCP_DEFER_ACCEPT), for up to d rounded up to
// whole seconds (the kernel counts SYN-ACK retransmits, 1 s doubling), so
// accept returns connections whose requests are there: what nginx's
// "deferred" and HAProxy's "defer-accept" ask for. In a herd the final ACK
// and the request are dropped on a full accept queue, and the ACK that a
// retransmitted SYN-ACK draws would make the connection alone, the
// client's request retransmits backing off behind it: of the 3,441,326
// connections a million-client run's targets accepted, 951,494 had sent
// nothing 5 s later, and a process's upgrade slots were all held by such
// connections for seconds at a time while its queue was full. With a deferred
// accept such a connection is made by its request, or not at all. (A
// connection made by a SYN cookie is not deferred: the kernel checks the
// cookie and makes it at once.)
func (l *Listener) DeferAccept(d time.Duration) error {
	secs := int((d + time.Second - 1) / time.Second)
	var serr error
	err := l.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, secs)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("target: TCP_DEFER_ACCEPT: %w", err)
	}
	return nil
}

// AcceptFD accepts one connection with a raw accept4 (non-blocking,
// close-on-exec), parking in the runtime's poller while the queue is
// empty: the connection stays a bare fd, never a net.Conn (upgradeInline).
// A deadline set on the listener interrupts it (os.ErrDeadlineExceeded),
// as it does Accept.
func (l *Listener) AcceptFD() (int, netip.AddrPort, error) {
	fd, peer, errno := -1, netip.AddrPort{}, unix.Errno(0)
	err := l.polledRaw.Read(func(lfd uintptr) bool {
		for {
			fd, peer, errno = rawsys.Accept4(int(lfd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			switch errno {
			case unix.EINTR, unix.ECONNABORTED: // a connection reset in the queue: the next
				continue
			case unix.EAGAIN:
				return false
			}
			return true
		}
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("accept4", errno)
	}
	if err != nil {
		return -1, peer, err
	}
	return fd, peer, nil
}

// Backlog returns the backlog last requested with Listen or SetBacklog (the
// kernel may cap it at net.core.somaxconn).
func (l *Listener) Backlog() int { return int(l.backlog.Load()) }

// bindSocket returns a bound, not yet listening TCP socket with SO_REUSEADDR
// and SO_REUSEPORT on addr. IPv6 sockets are IPv6-only, so "[::1]:P" and
// "127.0.0.1:P" are separate listeners.
func bindSocket(addr string) (int, error) {
	ap, err := parseAddr(addr)
	if err != nil {
		return -1, fmt.Errorf("target: %w", err)
	}
	family, sa := sockaddr(ap)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("target: socket for %s: %w", addr, err)
	}
	if err := groupSockopts(fd, family == unix.AF_INET6); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("target: setsockopt on %s: %w", addr, err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("target: bind %s: %w", addr, err)
	}
	return fd, nil
}

// groupSockopts sets what makes a socket a member of its address's
// SO_REUSEPORT group, a listener (Listen) and a port reservation
// (Reserve) alike: SO_REUSEADDR, SO_REUSEPORT and, for IPv6, IPv6-only.
// Go's listen sets the first and the last itself; setting them again is
// harmless and keeps the rule in one place.
func groupSockopts(fd int, v6 bool) error {
	opts := [][2]int{{unix.SOL_SOCKET, unix.SO_REUSEADDR}, {unix.SOL_SOCKET, unix.SO_REUSEPORT}}
	if v6 {
		opts = append(opts, [2]int{unix.IPPROTO_IPV6, unix.IPV6_V6ONLY})
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o[0], o[1], 1); err != nil {
			return err
		}
	}
	return nil
}

// CheckFree returns a *spec.FieldError on field Server.Addr when a socket
// already listens on addr (or on the wildcard address of its family at the
// same port), and nil when nothing does or addr's port is 0. It binds a
// probe with SO_REUSEADDR but without SO_REUSEPORT: Linux lets that bind
// beside sockets that only hold the port (TIME_WAIT, a group's
// reservation) and refuses it beside a listener.
func CheckFree(addr string) error {
	ap, err := parseAddr(addr)
	if err != nil || ap.Port() == 0 {
		return nil // Validate reports a bad address; port 0 is always free
	}
	family, sa := sockaddr(ap)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return fmt.Errorf("target: socket for %s: %w", addr, err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("target: setsockopt on %s: %w", addr, err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fmt.Errorf("target: setsockopt on %s: %w", addr, err)
		}
	}
	if err := unix.Bind(fd, sa); errors.Is(err, unix.EADDRINUSE) {
		return spec.Errorf("Server.Addr", "%s already has a listener; processes share a port only within one target group", addr)
	}
	return nil
}

// sockaddr returns the socket family and address of ap.
func sockaddr(ap netip.AddrPort) (int, unix.Sockaddr) {
	if ip := ap.Addr(); ip.Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// parseAddr parses "IP:port" with a literal IP or "localhost".
func parseAddr(addr string) (netip.AddrPort, error) { return spec.ParseAddr(addr) }

// Reservation is a socket bound to an address but not listening: it
// keeps the port for an SO_REUSEPORT group while no member listens (a
// restart's downtime), so connects are refused rather than reaching some
// other program, and nobody else can take the port. The kernel sends new
// connections only to listening sockets, so the reservation receives none.
type Reservation struct {
	fd   int
	addr string
}

// Reserve binds a placeholder socket on addr and returns it with the
// address actually bound (the port filled in when addr's port is 0).
func Reserve(addr string) (*Reservation, error) {
	fd, err := bindSocket(addr)
	if err != nil {
		return nil, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("target: reserve %s: %w", addr, err)
	}
	var ap netip.AddrPort
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return &Reservation{fd: fd, addr: ap.String()}, nil
}

// Addr returns the address bound, "IP:PORT".
func (r *Reservation) Addr() string { return r.addr }

// Close releases the port.
func (r *Reservation) Close() error { return unix.Close(r.fd) }
