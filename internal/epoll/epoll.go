// Package epoll is the one epoll core of the roles (loadgen, target,
// proxy): an epoll instance, the eventfd that wakes it from another
// goroutine, registration of a descriptor with a 64-bit token, and a wait
// that hides EINTR and the wake-up's own event.
//
// It holds no per-descriptor state: a registration is the kernel's
// (eventpoll_epi), and the token is the caller's key back to its own
// record, so a role's memory per connection is what it was without it.
// Each role keeps its loop (timers, bounded reads, accept) and calls Wait
// once per turn:
//
//	for {
//		evs, woken, err := p.Wait(ms)
//		if err != nil || woken { ... }
//		for i := range evs { handle(epoll.TokenOf(&evs[i]), evs[i].Events) }
//		... timers ...
//	}
//
// Edge- or level-triggered, one-shot or not, is the caller's choice per
// registration (unix.EPOLLET, unix.EPOLLONESHOT in events).
package epoll

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stampede-dev/stampede/internal/rawsys"
)

// Token is what a registration carries back in its events: 64 bits of the
// caller's choosing, usually an index and a generation (Pair), so that an
// event still queued for a closed descriptor finds a newer record's
// generation and is dropped rather than taken for the new owner of the fd
// number.
type Token uint64

// WakeToken is the token of the Poller's own eventfd. A caller never
// registers it: Wait reports it as woken, not as an event.
const WakeToken Token = 1<<64 - 1

// Pair makes a token of two 32-bit halves, lo in EpollEvent.Fd and hi in
// EpollEvent.Pad.
func Pair(lo, hi int32) Token { return Token(uint32(lo)) | Token(uint32(hi))<<32 }

// Lo returns the low half of t (EpollEvent.Fd).
func (t Token) Lo() int32 { return int32(uint32(t)) }

// Hi returns the high half of t (EpollEvent.Pad).
func (t Token) Hi() int32 { return int32(uint32(t >> 32)) }

// TokenOf returns the token ev was registered with.
func TokenOf(ev *unix.EpollEvent) Token { return Pair(ev.Fd, ev.Pad) }

// Poller is an epoll instance and the eventfd that wakes its Wait. Wait
// is for one goroutine; Add, Mod, Del and Wake are safe from any.
//
// Wait never blocks its thread in epoll_wait: the epoll descriptor sits in
// the Go runtime's own poller (an epoll set is readable while it has ready
// events), so a waiting goroutine parks there, holding no P, and polls the
// set without blocking once it is readable or its deadline passed. A
// thread blocked in a system call keeps its P, which the runtime's sysmon
// retakes after 20 µs to 10 ms and then checks every 20 µs: with 28
// processes of a run on two cores, that polling took a tenth of the CPU of
// a herd (lab/records/measurements.md).
type Poller struct {
	epfd, wake int
	events     []unix.EpollEvent
	file       *os.File // epfd, in the runtime's poller; closing it closes epfd
	raw        syscall.RawConn
}

// New opens a Poller whose Wait returns at most batch events at a time.
func New(batch int) (*Poller, error) {
	p := &Poller{epfd: -1, wake: -1}
	var err error
	if p.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	// A non-blocking descriptor is one os.NewFile puts in the runtime's
	// poller; SetReadDeadline fails for one it could not.
	if err := unix.SetNonblock(p.epfd, true); err != nil {
		unix.Close(p.epfd)
		return nil, fmt.Errorf("epoll: fcntl: %w", err)
	}
	p.file = os.NewFile(uintptr(p.epfd), "epoll")
	if err := p.file.SetReadDeadline(time.Time{}); err != nil {
		p.Close()
		return nil, fmt.Errorf("epoll: not pollable by the runtime: %w", err)
	}
	if p.raw, err = p.file.SyscallConn(); err != nil {
		p.Close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if p.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		p.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := p.Add(p.wake, unix.EPOLLIN, WakeToken); err != nil {
		p.Close()
		return nil, fmt.Errorf("epoll_ctl eventfd: %w", err)
	}
	p.events = make([]unix.EpollEvent, max(1, batch))
	return p, nil
}

// Add registers fd for events (unix.EPOLLIN, EPOLLET, ...) with token t.
// The error is the system call's (a unix.Errno), for callers that classify it.
func (p *Poller) Add(fd int, events uint32, t Token) error {
	return p.ctl(unix.EPOLL_CTL_ADD, fd, events, t)
}

// Mod changes fd's registration: events and token, e.g. to re-arm an
// EPOLLONESHOT descriptor.
func (p *Poller) Mod(fd int, events uint32, t Token) error {
	return p.ctl(unix.EPOLL_CTL_MOD, fd, events, t)
}

// Del removes fd from the set. Closing fd removes it too (once no
// duplicate of it is open).
func (p *Poller) Del(fd int) error { return p.ctl(unix.EPOLL_CTL_DEL, fd, 0, 0) }

// ctl is a raw system call, as poll is: epoll_ctl never blocks, and a
// reactor or the target's accept loop makes one for every connection.
func (p *Poller) ctl(op, fd int, events uint32, t Token) error {
	ev := unix.EpollEvent{Events: events, Fd: t.Lo(), Pad: t.Hi()}
	rawsys.Note(rawsys.SysEpollCtl)
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), uintptr(fd),
		uintptr(unsafe.Pointer(&ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Wake makes the current or next Wait return with woken set. Safe from
// any goroutine, until Close.
func (p *Poller) Wake() {
	one := [8]byte{1}
	_, _ = unix.Write(p.wake, one[:])
}

// Wait blocks until events are ready, Wake is called, or ms milliseconds
// pass (-1: no limit; 0: does not block). It returns the ready events in
// the kernel's order, the wake-up's removed (valid until the next Wait),
// and whether Wake was called since the last Wait reported it. An
// interrupted wait (EINTR) returns nothing and no error.
func (p *Poller) Wait(ms int) (events []unix.EpollEvent, woken bool, err error) {
	var n int
	var errno unix.Errno
	if ms == 0 {
		n, errno = p.poll()
	} else {
		var deadline time.Time
		if ms > 0 {
			deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
		}
		if err := p.file.SetReadDeadline(deadline); err != nil {
			return nil, false, fmt.Errorf("epoll: %w", err)
		}
		err := p.raw.Read(func(uintptr) bool {
			n, errno = p.poll()
			return n > 0 || errno != 0 // false: park until the set is readable
		})
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, false, fmt.Errorf("epoll: %w", err)
		}
	}
	if errno == unix.EINTR {
		return nil, false, nil
	}
	if errno != 0 {
		return nil, false, fmt.Errorf("epoll_wait: %w", errno)
	}
	events = p.events[:n]
	for i := range events {
		if TokenOf(&events[i]) == WakeToken {
			var b [8]byte
			_, _ = unix.Read(p.wake, b[:]) // level-triggered: drain it
			copy(events[i:], events[i+1:])
			return events[:n-1], true, nil
		}
	}
	return events, false, nil
}

// poll takes the ready events without blocking. It is a raw system call:
// it returns at once, and the runtime need not know the thread entered
// the kernel (entersyscall would wake a sleeping sysmon).
func (p *Poller) poll() (int, unix.Errno) {
	rawsys.Note(rawsys.SysEpollWait)
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd),
		uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
	return int(r), e
}

// FD returns the epoll instance's descriptor, for a caller that needs
// some open descriptor of its process (to size the fd table by dup).
func (p *Poller) FD() int { return p.epfd }

// Close releases the epoll instance and the eventfd, once Wait has
// returned for the last time and no Wake can come.
func (p *Poller) Close() {
	if p.file != nil {
		p.file.Close() // and with it epfd
		p.file, p.epfd = nil, -1
	}
	for _, fd := range []*int{&p.epfd, &p.wake} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
