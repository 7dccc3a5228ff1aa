// Package rawlisten opens the raw loopback listener the kernel-measurement
// scripts (synburst, synwheel) connect to: a blocking socket of exactly the
// backlog asked for, with no SO_REUSEPORT and nothing of Go's poller, so
// the scripts see the kernel's accept queue as it is.
package rawlisten

import "golang.org/x/sys/unix"

// Loopback listens on 127.0.0.1 at a free port with the given backlog. It
// returns the listening descriptor (the caller closes it) and the address
// to connect to.
func Loopback(backlog int) (fd int, dst *unix.SockaddrInet4, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	lo := [4]byte{127, 0, 0, 1}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: lo}); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, &unix.SockaddrInet4{Port: sa.(*unix.SockaddrInet4).Port, Addr: lo}, nil
}
