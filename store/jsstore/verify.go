package jsstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/minio/highwayhash"
)

// The record layout of a JetStream file store block (<index>.blk), as
// nats-server v2.15 writes it: a 22-byte header (record length with the
// headers bit, sequence, timestamp, subject length), the subject, the
// optional message headers (length-prefixed) and payload, and an 8-byte
// HighwayHash-64 keyed by sha256("<stream>-<index>") over the sequence,
// timestamp, subject, headers and payload.
const (
	recHdrSize  = 22
	recHashSize = 8
	recHdrBit   = 1 << 31
	recBadLen   = 32 << 20 // no record of ours is near this
)

// ErrDamaged is wrapped by StartServer's and Verify's error for a store
// with a damaged record that valid records follow: nats-server's recovery
// would truncate the block at the damage, dropping them, so the store
// refuses to start. Move the damaged block aside to start anyway.
var ErrDamaged = errors.New("store: jetstream: damaged record followed by valid ones")

// VerifyReport is what Verify found.
type VerifyReport struct {
	Blocks  int   // block files checked
	Records int   // records whose checksum holds
	Bytes   int64 // bytes read
	// TornTail names a block whose last record is cut short or fails its
	// checksum with nothing after it: a write that never completed, so
	// never acknowledged (every ACK follows an fsync), which recovery
	// truncates. Empty when there is none.
	TornTail string
}

// Verify checks every record of every stream under dir (a StartServer
// directory) before nats-server recovers it. nats-server treats a record
// that fails its checksum like a torn tail and truncates its block there,
// dropping the valid records after it; Verify refuses such a store
// (ErrDamaged) and allows only a damaged last record of a stream's last
// block, which is a write that never completed.
func Verify(dir string) (VerifyReport, error) {
	var rep VerifyReport
	streams, _ := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", "*"))
	for _, sdir := range streams {
		name := filepath.Base(sdir)
		blks, _ := filepath.Glob(filepath.Join(sdir, "msgs", "*.blk"))
		type blk struct {
			path  string
			index uint64
		}
		var bs []blk
		for _, p := range blks {
			i, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(p), ".blk"), 10, 32)
			if err == nil {
				bs = append(bs, blk{p, i})
			}
		}
		sort.Slice(bs, func(a, b int) bool { return bs[a].index < bs[b].index })
		for n, b := range bs {
			buf, err := os.ReadFile(b.path)
			if err != nil {
				return rep, fmt.Errorf("store: jetstream verify: %w", err)
			}
			rep.Blocks++
			rep.Bytes += int64(len(buf))
			recs, bad, badAt := verifyBlock(name, uint32(b.index), buf)
			rep.Records += recs
			if !bad {
				continue
			}
			if n == len(bs)-1 && !validAfter(name, uint32(b.index), buf, badAt) {
				rep.TornTail = b.path
				continue
			}
			return rep, fmt.Errorf("%w: %s at offset %d (stream %s); %d valid records checked before it. Recovery would truncate the block there; move the block aside (or restore it) to start",
				ErrDamaged, b.path, badAt, name, rep.Records)
		}
	}
	return rep, nil
}

// verifyBlock checks buf's records in order; it returns how many hold,
// and the offset of the first that does not.
func verifyBlock(stream string, index uint32, buf []byte) (ok int, bad bool, at int) {
	key := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", stream, index)))
	hh, _ := highwayhash.New64(key[:])
	le := binary.LittleEndian
	var sum [8]byte
	for i := 0; i < len(buf); {
		n, good := checkRecord(hh, le, buf[i:], sum[:0])
		if !good {
			return ok, true, i
		}
		ok++
		i += n
	}
	return ok, false, 0
}

// checkRecord checks the record at the start of b and returns its length.
func checkRecord(hh interface {
	Reset()
	Write([]byte) (int, error)
	Sum([]byte) []byte
}, le binary.ByteOrder, b []byte, sum []byte) (int, bool) {
	if len(b) < recHdrSize {
		return 0, false
	}
	rl := le.Uint32(b[0:])
	slen := int(le.Uint16(b[20:]))
	hasHdr := rl&recHdrBit != 0
	rl &^= recHdrBit
	if rl > recBadLen || int(rl) > len(b) || int(rl) < recHdrSize+recHashSize {
		return 0, false
	}
	dlen := int(rl) - recHdrSize
	shlen := slen
	if hasHdr {
		shlen += 4
	}
	if shlen > dlen-recHashSize {
		return 0, false
	}
	data := b[recHdrSize:rl]
	hh.Reset()
	hh.Write(b[4:20])
	hh.Write(data[:slen])
	if hasHdr {
		hh.Write(data[slen+4 : dlen-recHashSize])
	} else {
		hh.Write(data[slen : dlen-recHashSize])
	}
	if !bytes.Equal(hh.Sum(sum), data[dlen-recHashSize:]) {
		return 0, false
	}
	return int(rl), true
}

// validAfter reports whether any valid record starts after offset at:
// the damage is then in the middle, not a torn tail.
func validAfter(stream string, index uint32, buf []byte, at int) bool {
	key := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", stream, index)))
	hh, _ := highwayhash.New64(key[:])
	var sum [8]byte
	for i := at + 1; i+recHdrSize+recHashSize <= len(buf); i++ {
		if _, ok := checkRecord(hh, binary.LittleEndian, buf[i:], sum[:0]); ok {
			return true
		}
	}
	return false
}
