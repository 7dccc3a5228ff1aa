package sim

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeMin is the smallest array worth mapping on its own: below it the Go
// heap's pages are as good.
const hugeMin = 16 << 20

// makeClients returns a zeroed array of n clients and the function that
// frees it. A large fleet is mapped outside the Go heap, on transparent
// huge pages where the kernel gives them (madvise mode, this machine's):
// the engine reads clients at random across hundreds of megabytes, and
// with 4 KiB pages nearly every such read also misses the TLB.
func makeClients(n int) ([]client, func()) {
	size := n * int(unsafe.Sizeof(client{}))
	if size < hugeMin {
		return make([]client, n), func() {}
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]client, n), func() {}
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE) // a hint: 4 KiB pages work too
	return unsafe.Slice((*client)(unsafe.Pointer(unsafe.SliceData(b))), n), func() { _ = unix.Munmap(b) }
}
