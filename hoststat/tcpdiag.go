package hoststat

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The sock_diag netlink interface (linux/inet_diag.h): one dump request
// per address family returns every TCP socket of the namespace as a
// binary record, which costs the kernel far less than formatting
// /proc/net/tcp's text lines.
const (
	inetDiagReqLen = 56 // struct inet_diag_req_v2
	inetDiagMsgLen = 72 // struct inet_diag_msg
	tcpAllStates   = 0xffe
	// inetDiagSkmeminfo is the INET_DIAG_SKMEMINFO attribute: the
	// socket's memory, u32 values indexed by SK_MEMINFO_*.
	inetDiagSkmeminfo   = 7
	skMeminfoRmemAlloc  = 0 // receive queue
	skMeminfoFwdAlloc   = 4 // charged to the socket, not yet used
	skMeminfoWmemQueued = 5 // send and retransmit queues
	skMeminfoOptmem     = 6 // socket options, filters
)

var diagSeq atomic.Uint32

// diagTCPStates is PortTCPStates over sock_diag.
func diagTCPStates(lport, rport uint16) (local, remote TCPStates, err error) {
	l, r, err := diagPortSockets(lport, rport)
	return l.States, r.States, err
}

// diagPortSockets is PortSockets over sock_diag: the states, and each
// socket's memory (INET_DIAG_SKMEMINFO) summed per side.
func diagPortSockets(lport, rport uint16) (local, remote PortSockets, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return local, remote, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 64<<10)
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		seq := diagSeq.Add(1)
		req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
		ne := binary.NativeEndian
		ne.PutUint32(req[0:], uint32(len(req)))
		ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
		ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
		ne.PutUint32(req[8:], seq)
		r := req[unix.NLMSG_HDRLEN:]
		r[0], r[1] = family, unix.IPPROTO_TCP
		r[2] = 1 << (inetDiagSkmeminfo - 1) // idiag_ext: ask for the memory
		ne.PutUint32(r[4:], tcpAllStates)
		if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return local, remote, os.NewSyscallError("sendto", err)
		}
		if err := readDiag(fd, buf, seq, lport, rport, &local, &remote); err != nil {
			return local, remote, err
		}
	}
	return local, remote, nil
}

// readDiag reads one dump's answers until NLMSG_DONE.
func readDiag(fd int, buf []byte, seq uint32, lport, rport uint16, local, remote *PortSockets) error {
	ne := binary.NativeEndian
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("recvfrom", err)
		}
		b := buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(ne.Uint32(b[0:]))
			typ := ne.Uint16(b[4:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return fmt.Errorf("sock_diag: bad message length %d", l)
			}
			if ne.Uint32(b[8:]) == seq {
				switch typ {
				case unix.NLMSG_DONE:
					return nil
				case unix.NLMSG_ERROR:
					if l >= unix.NLMSG_HDRLEN+4 {
						if e := int32(ne.Uint32(b[unix.NLMSG_HDRLEN:])); e != 0 {
							return os.NewSyscallError("sock_diag", unix.Errno(-e))
						}
					}
					return fmt.Errorf("sock_diag: error answer")
				case unix.SOCK_DIAG_BY_FAMILY:
					if m := b[unix.NLMSG_HDRLEN:l]; len(m) >= inetDiagMsgLen {
						st := int(m[1])
						// Ports are big-endian in struct inet_diag_sockid.
						sport, dport := binary.BigEndian.Uint16(m[4:]), binary.BigEndian.Uint16(m[6:])
						if st > 0 && st < len(local.States) && (sport == lport || dport == rport) {
							mem := skmem(m[inetDiagMsgLen:])
							if sport == lport {
								local.States[st]++
								local.MemBytes += mem
							}
							if dport == rport {
								remote.States[st]++
								remote.MemBytes += mem
							}
						}
					}
				}
			}
			b = b[min(nlmAlign(l), len(b)):]
		}
	}
}

// skmem returns the kernel memory charged to one socket from the
// attributes after its inet_diag_msg: receive queue, send queues, forward
// allocation and option memory (what `ss -m` shows as r, w, f and o).
// 0 without an INET_DIAG_SKMEMINFO attribute.
func skmem(attrs []byte) uint64 {
	ne := binary.NativeEndian
	for len(attrs) >= 4 {
		l, typ := int(ne.Uint16(attrs[0:])), ne.Uint16(attrs[2:])
		if l < 4 || l > len(attrs) {
			return 0
		}
		if typ == inetDiagSkmeminfo {
			v := attrs[4:l]
			var sum uint64
			for _, i := range []int{skMeminfoRmemAlloc, skMeminfoFwdAlloc, skMeminfoWmemQueued, skMeminfoOptmem} {
				if 4*i+4 <= len(v) {
					sum += uint64(ne.Uint32(v[4*i:]))
				}
			}
			return sum
		}
		attrs = attrs[min((l+3)&^3, len(attrs)):]
	}
	return 0
}

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
