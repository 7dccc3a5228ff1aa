package hoststat

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// TCPStates counts TCP sockets by state, indexed by the kernel's state
// number (1 ESTABLISHED .. 11 CLOSING; index 0 is unused).
type TCPStates [12]int

// tcpStateNames are the column names of resources.csv, by state number.
var tcpStateNames = [12]string{"", "established", "syn_sent", "syn_recv", "fin_wait1", "fin_wait2",
	"time_wait", "close", "close_wait", "last_ack", "listen", "closing"}

// TCPStateNames returns the state names in state-number order (ESTABLISHED
// first), as resources.csv names its columns after "tcp_".
func TCPStateNames() []string { return append([]string(nil), tcpStateNames[1:]...) }

// PortSockets is one side's TCP sockets at one moment (PortSockets, the
// function): how many are in each state, and the kernel memory charged to
// them.
type PortSockets struct {
	States TCPStates
	// MemBytes is the kernel memory charged to the sockets, summed: their
	// receive queues, send and retransmit queues, forward allocations and
	// option memory (sock_diag INET_DIAG_SKMEMINFO; `ss -m` shows them as
	// r, w, f and o). It does not count the socket structures themselves
	// (slab memory, docs/sizing.md). 0 when read from /proc, which has no
	// such figure.
	MemBytes uint64
}

// PortSocketsOf is PortTCPStates with each side's socket memory, which only
// sock_diag gives: from the /proc fallback MemBytes is 0.
func PortSocketsOf(lport, rport uint16) (local, remote PortSockets, err error) {
	if local, remote, err = diagPortSockets(lport, rport); err == nil {
		return local, remote, nil
	}
	local.States, remote.States, err = procTCPStates(lport, rport)
	return local, remote, err
}

// tcpFiles are the socket tables of the calling process's network
// namespace.
var tcpFiles = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// PortTCPStates counts the sockets of the namespace whose local port is
// lport (the server's side: its listener, accepted connections, and
// SYN_RECV requests) and those whose remote port is rport (the clients'
// side), by state. It is how a run counts TCP states per role: the target
// owns lport, the loadgen dials rport (the same port, or a proxy's). Another program on the same port of the
// namespace would be counted too; stampede's target ports are its own.
//
// It asks the kernel over sock_diag netlink (binary records, one dump per
// address family) and falls back to reading /proc/net/tcp and tcp6 when
// netlink is not available. Either walks the whole namespace's socket
// table: measured with 18,000 connected sockets and about 97,000 TIME_WAIT
// ones from earlier runs in the namespace, 40-120 ms per call over
// sock_diag and 140-190 ms from /proc. Once a second in the coordinator
// process (not the target's or the loadgen's) that is a few per cent of one
// core, which is why it is sampled with resources and no more often; a
// per-process count (gopsutil's net.ConnectionsPid) walks every fd of every
// process and costs far more.
func PortTCPStates(lport, rport uint16) (local, remote TCPStates, err error) {
	if local, remote, err = diagTCPStates(lport, rport); err == nil {
		return local, remote, nil
	}
	return procTCPStates(lport, rport)
}

// procTCPStates is PortTCPStates from /proc/net/tcp and tcp6.
func procTCPStates(lport, rport uint16) (local, remote TCPStates, err error) {
	for _, name := range tcpFiles {
		f, err := os.Open(name)
		if os.IsNotExist(err) && name != tcpFiles[0] {
			continue // no IPv6
		}
		if err != nil {
			return local, remote, fmt.Errorf("results: tcp states: %w", err)
		}
		err = CountTCPStates(f, lport, rport, &local, &remote)
		f.Close()
		if err != nil {
			return local, remote, fmt.Errorf("results: tcp states: %s: %w", name, err)
		}
	}
	return local, remote, nil
}

// CountTCPStates adds to local the sockets of a /proc/net/tcp table (r)
// whose local port is lport, and to remote those whose remote port is
// rport.
//
//	sl  local_address rem_address   st ...
//	 0: 0100007F:1F90 00000000:0000 0A ...
func CountTCPStates(r io.Reader, lport, rport uint16, local, remote *TCPStates) error {
	br := bufio.NewReaderSize(r, 64<<10)
	first := true
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && !first {
			lp, rp, st, ok := parseTCPLine(line)
			if !ok {
				return fmt.Errorf("bad line %q", bytes.TrimSpace(line))
			}
			if st > 0 && st < len(local) {
				if lp == lport {
					local[st]++
				}
				if rp == rport {
					remote[st]++
				}
			}
		}
		first = false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parseTCPLine reads the local port, remote port and state of one table
// line without allocating.
func parseTCPLine(line []byte) (lport, rport uint16, state int, ok bool) {
	f := 0 // field index
	i := 0
	for f < 4 {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		start := i
		for i < len(line) && line[i] != ' ' && line[i] != '\n' {
			i++
		}
		if start == i {
			return 0, 0, 0, false
		}
		field := line[start:i]
		switch f {
		case 1, 2: // ADDR:PORT in hex
			c := bytes.LastIndexByte(field, ':')
			if c < 0 {
				return 0, 0, 0, false
			}
			p, ok := hexUint(field[c+1:])
			if !ok || p > 0xffff {
				return 0, 0, 0, false
			}
			if f == 1 {
				lport = uint16(p)
			} else {
				rport = uint16(p)
			}
		case 3:
			s, ok := hexUint(field)
			if !ok {
				return 0, 0, 0, false
			}
			state = int(s)
		}
		f++
	}
	return lport, rport, state, true
}

func hexUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d, ok := unhexDigit(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

func unhexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
