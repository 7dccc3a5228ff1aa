package target

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RetryLedgerEnv names the environment variable through which a Group
// hands its processes the retry ledger: a file every process maps, so a
// client rejected by one process of the SO_REUSEPORT group and coming back
// early to another is still counted in Stats.EarlyRetries. (The kernel
// hashes each new connection, with its new source port, to any process.)
const RetryLedgerEnv = "STAMPEDE_RETRY_LEDGER"

// The ledger file: a header of two words, the epoch (Unix ms) that entries
// count from and whether any entry was ever noted, then ledgerSets sets of
// ledgerWays entries. An entry is one 64-bit word, read and written
// atomically, so processes need no lock:
//
//	bits 63..40  fingerprint of the client key (never 0)
//	bits 39..0   not-before, ms after the epoch (about 34 years)
//
// A key maps to one set by its hash; a full set gives up its soonest
// entry. A lost entry undercounts early retries; a fingerprint shared by
// two keys in one set (a chance of about 2^-24) could overcount one.
//
// Every upgrade asks the ledger, but only a Reject window notes entries:
// until one has, a lookup reads the header alone. A page of the mapping
// that a process has read counts in its RSS, and random keys read every
// page soon, so without the header's word each of a million clients'
// 56 target processes carried the whole 2 MiB, 117 B a connection.
const (
	ledgerSets   = 1 << 16
	ledgerWays   = 4
	ledgerHeader = 16
	ledgerSize   = ledgerHeader + ledgerSets*ledgerWays*8 // 2 MiB
	ledgerMSBits = 40
	ledgerMSMask = 1<<ledgerMSBits - 1
)

// retryLedger is the mapped ledger file.
type retryLedger struct {
	mem   []byte
	noted *uint64  // the header's second word: 1 once any entry was noted
	words []uint64 // the entries, aliasing mem after the header
	epoch time.Time
}

// CreateRetryLedger creates a retry ledger file (RetryLedgerEnv) in dir ("" for the default temporary
// directory) with the epoch now, and returns its path.
func CreateRetryLedger(dir string, now time.Time) (string, error) {
	f, err := os.CreateTemp(dir, "stampede-retries-*")
	if err != nil {
		return "", fmt.Errorf("target: retry ledger: %w", err)
	}
	defer f.Close()
	var hdr [ledgerHeader]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(now.UnixMilli()))
	if _, err = f.Write(hdr[:]); err == nil {
		err = f.Truncate(ledgerSize)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("target: retry ledger: %w", err)
	}
	return f.Name(), nil
}

// openLedger maps the ledger file at path, shared with every process that
// maps it.
func openLedger(path string) (*retryLedger, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("target: retry ledger: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != ledgerSize {
		return nil, fmt.Errorf("target: retry ledger %s: not a ledger file", path)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, ledgerSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("target: retry ledger: mmap: %w", err)
	}
	epoch := time.UnixMilli(int64(binary.LittleEndian.Uint64(mem[:8])))
	// The mapping is page-aligned, so every word is 8-byte aligned.
	noted := (*uint64)(unsafe.Pointer(&mem[8]))
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[ledgerHeader])), ledgerSets*ledgerWays)
	return &retryLedger{mem: mem, noted: noted, words: words, epoch: epoch}, nil
}

// slot returns the key's set and fingerprint.
func (l *retryLedger) slot(key string) (set []uint64, fp uint64) {
	h := fnv.New64a()
	h.Write([]byte(key))
	sum := h.Sum64()
	fp = sum>>ledgerMSBits | 1 // 24 bits, never 0
	i := int(sum%ledgerSets) * ledgerWays
	return l.words[i : i+ledgerWays], fp
}

// ms is t in ms after the epoch, rounded down (a not-before rounded down
// never calls an on-time client early), clamped to the entry's range.
func (l *retryLedger) ms(t time.Time) uint64 {
	d := t.Sub(l.epoch).Milliseconds()
	return uint64(min(max(d, 0), ledgerMSMask))
}

// early reports whether key has an entry whose not-before is after now.
func (l *retryLedger) early(key string, now time.Time) bool {
	if atomic.LoadUint64(l.noted) == 0 {
		return false
	}
	set, fp := l.slot(key)
	for i := range set {
		w := atomic.LoadUint64(&set[i])
		if w>>ledgerMSBits == fp {
			return l.ms(now) < w&ledgerMSMask
		}
	}
	return false
}

// note records that key may not come back before nb: in the key's entry,
// else an empty or expired one, else in place of the soonest.
func (l *retryLedger) note(key string, nb, now time.Time) {
	if atomic.LoadUint64(l.noted) == 0 {
		atomic.StoreUint64(l.noted, 1)
	}
	set, fp := l.slot(key)
	entry := fp<<ledgerMSBits | l.ms(nb)
	victim, soonest := -1, uint64(ledgerMSMask+1)
	for i := range set {
		w := atomic.LoadUint64(&set[i])
		switch {
		case w>>ledgerMSBits == fp:
			atomic.StoreUint64(&set[i], entry)
			return
		case w == 0 || w&ledgerMSMask <= l.ms(now):
			victim, soonest = i, 0
		case w&ledgerMSMask < soonest:
			victim, soonest = i, w&ledgerMSMask
		}
	}
	atomic.StoreUint64(&set[victim], entry)
}
