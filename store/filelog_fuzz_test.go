package store

import (
	"bytes"
	"testing"
)

// FuzzScanLog feeds the file store's record scanner (what recovery reads
// back from disk) any bytes. It must not panic; the valid prefix it
// reports is within the input and is exactly the records it passed on,
// encoded again; and the search for a valid record after a damaged one
// answers an offset past the prefix, or none.
func FuzzScanLog(f *testing.F) {
	var log []byte
	log = appendRecord(log, 1, "r", "id1", []byte("body"))
	log = appendRecord(log, 2, "r", "id2", nil)
	log = appendRecord(log, 1, "", "", []byte("empty room and id"))
	f.Add(log)
	f.Add(append(append([]byte(nil), log...), 0, 0, 0, 0, 0, 0, 0, 0)) // preallocated zeros
	f.Add(log[:len(log)-3])                                            // a torn tail
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0})                  // an absurd length
	f.Add([]byte{5, 0})                                                // half a header
	damaged := append([]byte(nil), log...)
	damaged[recHeader+1] ^= 0xff
	f.Add(damaged)
	f.Fuzz(func(t *testing.T, b []byte) {
		var again []byte
		valid, err := scanLog(bytes.NewReader(b), func(r record) error {
			again = appendRecord(again, r.seq, r.room, r.id, r.body)
			return nil
		})
		if err != nil {
			t.Fatalf("scanLog of an in-memory log: %v", err)
		}
		if valid < 0 || valid > int64(len(b)) {
			t.Fatalf("valid prefix %d of %d bytes", valid, len(b))
		}
		if !bytes.Equal(again, b[:valid]) {
			t.Fatalf("the records passed on encode to %d bytes, not the %d-byte valid prefix", len(again), valid)
		}
		at, err := validRecordAfter(bytes.NewReader(b), valid, int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		if at != -1 && (at <= valid || at >= int64(len(b))) {
			t.Fatalf("valid record after %d found at %d of %d", valid, at, len(b))
		}
	})
}
