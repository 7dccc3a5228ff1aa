package hoststat

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// countFDs returns how many files process pid has open. Linux 6.2 and
// later give the count as the size of /proc/PID/fd (one stat, about 1 us);
// before that, and when the size is 0, the directory's entries are
// counted through a fixed buffer (about 5 ms for a process holding 15,000
// sockets: a quarter-million-client run's 28 processes took an eighth of
// a core every second). gopsutil's NumFDs reads every name into a string
// first: a process holding 15,000 sockets then costs the sampler about
// half a megabyte of garbage each second, so a coordinator's memory would
// grow with the fleet it samples.
func countFDs(pid int32) (int64, error) {
	dir := "/proc/" + strconv.Itoa(int(pid)) + "/fd"
	if fi, err := os.Stat(dir); err != nil {
		return 0, err
	} else if fi.Size() > 0 {
		return fi.Size(), nil
	}
	return countDirFDs(dir)
}

// countDirFDs counts the entries of dir, a /proc/PID/fd.
func countDirFDs(dir string) (int64, error) {
	f, err := os.Open(dir)
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
