package wsdial

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// control is the net.Dialer.Control hook. Go calls it after socket() and
// before bind() and connect(), which is the only moment both options can
// still take effect:
//
//   - TCP_SYNCNT bounds how many SYN retransmits the kernel sends before
//     connect fails with ETIMEDOUT, so a full backlog costs seconds, not the
//     default ~135 s.
//   - IP_BIND_ADDRESS_NO_PORT makes the bind to LocalAddr reserve only the
//     address; the port is picked at connect() per destination, so the
//     ephemeral range is shared between destinations instead of exhausted
//     by the bind.
func (d *Dialer) control(_, _ string, rc syscall.RawConn) error {
	var opErr error
	err := rc.Control(func(fd uintptr) {
		if d.SynRetries > 0 {
			if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_SYNCNT, d.SynRetries); err != nil {
				opErr = fmt.Errorf("setsockopt TCP_SYNCNT=%d: %w", d.SynRetries, err)
				return
			}
		}
		if d.LocalAddr.IsValid() {
			if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err != nil {
				opErr = fmt.Errorf("setsockopt IP_BIND_ADDRESS_NO_PORT: %w", err)
			}
		}
	})
	if err != nil {
		return err
	}
	return opErr
}
