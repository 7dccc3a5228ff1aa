package proxy

import "golang.org/x/sys/unix"

// The reset fault (fault.Set.Reset) resets every link when it starts and
// every connection accepted while it lasts: SO_LINGER with a zero timeout,
// then close, makes the kernel send RST instead of FIN and drop unsent
// data. Clients see ECONNRESET: a connected WebSocket client reports
// closed_1006, one in its handshake reports reset. The upstream side is
// reset too, so the server sees the client vanish the same way.

// resetFD closes fd with an RST.
func resetFD(fd int) {
	unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	unix.Close(fd)
}

// resetLink resets both sockets of l and frees it.
func (r *reactor) resetLink(l *link) {
	for i, fd := range l.fd {
		if fd >= 0 {
			resetFD(fd)
			l.fd[i] = -1
		}
	}
	r.closeLink(l)
}
