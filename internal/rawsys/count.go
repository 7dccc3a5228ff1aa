package rawsys

import "sync/atomic"

// Kind is a kind of system call the process counts: those of this
// package's calls and of internal/epoll's, which the loadgen's and the
// target's reactors and the target's accept loop make for each attempt.
type Kind uint8

// The kinds counted, named as the kernel's calls are (Names).
const (
	SysSocket Kind = iota
	SysBind
	SysConnect
	SysSetsockopt
	SysGetsockopt
	SysAccept4
	SysRead
	SysRecvfrom
	SysWrite
	SysWritev
	SysPpoll
	SysClose
	SysEpollCtl
	SysEpollWait
	SysSendmsg
	SysRecvmsg
	NumKinds
)

// Names are the kinds' names, the kernel's: the keys of Counts.
var Names = [NumKinds]string{
	"socket", "bind", "connect", "setsockopt", "getsockopt", "accept4", "read",
	"recvfrom", "write", "writev", "ppoll", "close", "epoll_ctl", "epoll_wait", "sendmsg",
	"recvmsg",
}

// counter is one kind's count on a cache line of its own: reactors on
// different threads count different kinds without sharing a line.
type counter struct {
	n atomic.Uint64
	_ [56]byte
}

var counts [NumKinds]counter

// Note counts one call of kind k. Every call of this package notes
// itself; internal/epoll notes its epoll_ctl and epoll_wait.
func Note(k Kind) { counts[k].n.Add(1) }

// Counts returns the calls made by the process since it started, by kind
// (Names), the kinds never made left out. The counts are the process's,
// whatever made the calls: a process that runs both a loadgen and a
// target counts both.
func Counts() map[string]uint64 {
	out := make(map[string]uint64, NumKinds)
	for k := range counts {
		if n := counts[k].n.Load(); n > 0 {
			out[Names[k]] = n
		}
	}
	return out
}
