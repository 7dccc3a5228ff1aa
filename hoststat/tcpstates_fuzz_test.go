package hoststat

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// refTCPLine is parseTCPLine written the slow, obvious way.
func refTCPLine(line string) (lport, rport uint16, state int, ok bool) {
	fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\n' })
	if len(fields) < 4 {
		return 0, 0, 0, false
	}
	hex := func(s string) (uint64, bool) {
		if len(s) == 0 || len(s) > 8 {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 16, 64)
		return v, err == nil
	}
	var ports [2]uint16
	for i, a := range fields[1:3] {
		c := strings.LastIndexByte(a, ':')
		if c < 0 {
			return 0, 0, 0, false
		}
		p, ok := hex(a[c+1:])
		if !ok || p > 0xffff {
			return 0, 0, 0, false
		}
		ports[i] = uint16(p)
	}
	s, ok := hex(fields[3])
	if !ok {
		return 0, 0, 0, false
	}
	return ports[0], ports[1], int(s), true
}

// FuzzCountTCPStates: no /proc/net/tcp text makes the kernel table parser
// panic; each line reads as the obvious parser reads it; a table that
// parses counts no more sockets than it has lines.
func FuzzCountTCPStates(f *testing.F) {
	head := "  sl  local_address rem_address   st tx_queue rx_queue\n"
	for _, s := range []string{
		head + "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000\n   1: 0100007F:D431 0100007F:1F90 01 0\n",
		head + "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A\n",
		head + "   0: 0100007F:1F90 00000000:0000\n", // no state
		head + "   0: 0100007F:10000 0:0 01\n",       // a port past 16 bits
		head + "   0: 0100007F:1F90 0:0 FFFFFFFF\n",  // no such state
		head + "   0: 0100007F:1f90 0:0 0g\n", head, "", "\n\n", head + "0:\t0:1 0:2 01\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.SplitAfter(in, "\n")
		for _, l := range lines[1:] {
			if l == "" {
				continue
			}
			lp, rp, st, ok := parseTCPLine([]byte(l))
			wlp, wrp, wst, wok := refTCPLine(l)
			if ok != wok || (ok && (lp != wlp || rp != wrp || st != wst)) {
				t.Fatalf("line %q: %d %d %d %v, want %d %d %d %v", l, lp, rp, st, ok, wlp, wrp, wst, wok)
			}
		}
		var local, remote TCPStates
		if err := CountTCPStates(bytes.NewReader([]byte(in)), 0x1f90, 0x1f90, &local, &remote); err != nil {
			return
		}
		for _, c := range []TCPStates{local, remote} {
			n := 0
			for _, k := range c {
				n += k
			}
			if n > len(lines) {
				t.Fatalf("%q: %d sockets counted from %d lines", in, n, len(lines))
			}
		}
	})
}
