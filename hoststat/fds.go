package hoststat

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// countFDs returns how many files process pid has open, by counting the
// entries of /proc/PID/fd through a fixed buffer. gopsutil's NumFDs reads
// every name into a string first: a process holding 15,000 sockets then
// costs the sampler about half a megabyte of garbage each second, so a
// coordinator's memory would grow with the fleet it samples.
func countFDs(pid int32) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(int(pid)) + "/fd")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var buf [16 << 10]byte
	var n int64
	for {
		got, err := unix.Getdents(int(f.Fd()), buf[:])
		if err != nil {
			return 0, os.NewSyscallError("getdents", err)
		}
		if got <= 0 {
			return n, nil
		}
		for off := 0; off < got; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(uint16(buf[off+16]) | uint16(buf[off+17])<<8)
			name := buf[off+19 : off+reclen]
			if !(name[0] == '.' && (name[1] == 0 || name[1] == '.' && name[2] == 0)) {
				n++
			}
			off += reclen
		}
	}
}
