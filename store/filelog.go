package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// The embedded store's log is a sequence of records, each
//
//	+----------+----------+----------------------------------------------+
//	| len u32  | crc u32  | payload (len bytes)                          |
//	+----------+----------+----------------------------------------------+
//	payload = uvarint seq | uvarint len(room) | room | uvarint len(id) | id | body
//
// little-endian, crc = CRC-32C of the payload. A record is valid only when
// whole and its CRC matches; recovery keeps the longest valid prefix.

const (
	recHeader = 8
	// maxRecord bounds a record's payload so a corrupt length cannot make
	// recovery allocate gigabytes.
	maxRecord = 16 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one record to dst.
func appendRecord(dst []byte, seq uint64, room, id string, body []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeader)...)
	dst = binary.AppendUvarint(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(room)))
	dst = append(dst, room...)
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	dst = append(dst, id...)
	dst = append(dst, body...)
	payload := dst[start+recHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

// record is one decoded log record.
type record struct {
	seq      uint64
	room, id string
	body     []byte
}

var errBadRecord = errors.New("store: bad record")

// parseRecord decodes a payload whose CRC was checked.
func parseRecord(p []byte) (record, error) {
	var r record
	var n int
	if r.seq, n = binary.Uvarint(p); n <= 0 {
		return r, errBadRecord
	}
	p = p[n:]
	str := func() (string, bool) {
		l, n := binary.Uvarint(p)
		if n <= 0 || l > uint64(len(p)-n) {
			return "", false
		}
		s := string(p[n : n+int(l)])
		p = p[n+int(l):]
		return s, true
	}
	var ok bool
	if r.room, ok = str(); !ok {
		return r, errBadRecord
	}
	if r.id, ok = str(); !ok {
		return r, errBadRecord
	}
	r.body = p
	return r, nil
}

// scanLog reads records from r, calling fn for each valid one, and returns
// the offset just past the last valid record: the length the log must be
// truncated to. It stops at the first short, oversized or corrupt record,
// or when fn returns an error (a record that does not fit the state: also
// treated as the end of the valid log).
func scanLog(r io.Reader, fn func(record) error) (valid int64, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var hdr [recHeader]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return valid, ignoreEOF(err)
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n == 0 || n > maxRecord {
			// 0: the preallocated zeros after the last record.
			return valid, nil
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return valid, ignoreEOF(err)
		}
		if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return valid, nil
		}
		rec, err := parseRecord(buf)
		if err != nil {
			return valid, nil
		}
		rec.body = append([]byte(nil), rec.body...)
		if fn(rec) != nil {
			return valid, nil
		}
		valid += recHeader + int64(n)
	}
}

// ignoreEOF maps the end of the file (whole or mid-record) to nil: a torn
// tail is expected after a crash.
func ignoreEOF(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil
	}
	return err
}
