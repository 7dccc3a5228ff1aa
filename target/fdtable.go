package target

import "golang.org/x/sys/unix"

// maxPresize caps presizeFDTable: 2^17 fd slots are 1 MiB of kernel memory.
const maxPresize = 1 << 17

// presizeFDTable grows the process's file descriptor table once, at start,
// to as many fds as the open-file limit allows (at most maxPresize), by
// duplicating fd to the highest number and closing the copy.
//
// The kernel doubles the table when a new fd does not fit, and in a
// multi-threaded process it waits for an RCU grace period meanwhile, with
// every other fd allocation of the process waiting behind it: the accept
// loop's, and each upgrade goroutine's duplicate of its socket (detach).
// Under a reconnect herd on a loaded machine those waits stalled dozens
// of threads at once, and the Go runtime started a thread for each
// runnable goroutine left: about 50 threads per target process, 25 KB of
// RSS each (docs/sizing.md). The slots would be taken by connections
// anyway.
func presizeFDTable(fd int) {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Cur < 2 {
		return
	}
	hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, int(min(lim.Cur, maxPresize)-1))
	if err == nil {
		unix.Close(hi)
	}
}
