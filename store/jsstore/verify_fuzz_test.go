package jsstore

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/highwayhash"
)

// fuzzRecord is one block record as nats-server writes it (the layout
// verify.go checks), for the seeds.
func fuzzRecord(stream string, index uint32, seq uint64, subj string, hdr, msg []byte) []byte {
	le := binary.LittleEndian
	rl := recHdrSize + len(subj) + len(msg) + recHashSize
	if hdr != nil {
		rl += 4 + len(hdr)
	}
	b := make([]byte, recHdrSize, rl)
	l := uint32(rl)
	if hdr != nil {
		l |= recHdrBit
	}
	le.PutUint32(b[0:], l)
	le.PutUint64(b[4:], seq)
	le.PutUint64(b[12:], uint64(1_800_000_000_000_000_000)+seq)
	le.PutUint16(b[20:], uint16(len(subj)))
	b = append(b, subj...)
	if hdr != nil {
		b = le.AppendUint32(b, uint32(len(hdr)))
		b = append(b, hdr...)
	}
	b = append(b, msg...)
	key := sha256.Sum256([]byte(stream + "-" + itoa(index)))
	hh, _ := highwayhash.New64(key[:])
	hh.Write(b[4:20])
	hh.Write([]byte(subj))
	hh.Write(hdr)
	hh.Write(msg)
	return hh.Sum(b)
}

func itoa(i uint32) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// FuzzVerifyBlock feeds the block verifier (which runs on every store
// folder before nats-server recovers it) any block file contents. It
// must not panic; a block it finds whole is tiled exactly by records
// that hold; and Verify on a folder holding that block as its stream's
// last one answers ok, a torn tail, or ErrDamaged, in agreement with the
// record walk: damage with a valid record after it is never a torn tail.
func FuzzVerifyBlock(f *testing.F) {
	r1 := fuzzRecord(DefaultStream, 1, 1, "stampede.STAMPEDE.d.72.61", nil, []byte("1"))
	r2 := fuzzRecord(DefaultStream, 1, 2, "stampede.STAMPEDE.m.72.1", []byte("NATS/1.0\r\nStampede-Id: a\r\n\r\n"), []byte("body"))
	two := append(append([]byte(nil), r1...), r2...)
	if n, bad, _ := verifyBlock(DefaultStream, 1, two); n != 2 || bad {
		f.Fatalf("the seed block: %d records hold (damaged %v), want 2", n, bad)
	}
	f.Add(two)
	f.Add(two[:len(two)-5]) // a torn tail
	mid := append([]byte(nil), two...)
	mid[10] ^= 0xff // the first record damaged, the second whole
	f.Add(mid)
	f.Add([]byte{})
	f.Add(make([]byte, recHdrSize))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, buf []byte) {
		ok, bad, at := verifyBlock(DefaultStream, 1, buf)
		key := sha256.Sum256([]byte(DefaultStream + "-1"))
		hh, _ := highwayhash.New64(key[:])
		var sum [8]byte
		walked, i := 0, 0
		for i < len(buf) {
			n, good := checkRecord(hh, binary.LittleEndian, buf[i:], sum[:0])
			if !good {
				break
			}
			if n <= 0 {
				t.Fatalf("record of length %d at %d", n, i)
			}
			walked++
			i += n
		}
		if ok != walked || bad != (i < len(buf)) || (bad && at != i) {
			t.Fatalf("verifyBlock = %d %v %d; the walk found %d records, stopping at %d of %d", ok, bad, at, walked, i, len(buf))
		}
		after := bad && validAfter(DefaultStream, 1, buf, at)

		dir := t.TempDir()
		msgs := filepath.Join(dir, "jetstream", "$G", "streams", DefaultStream, "msgs")
		if err := os.MkdirAll(msgs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(msgs, "1.blk"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(dir)
		switch {
		case !bad:
			if err != nil || rep.TornTail != "" || rep.Records != ok {
				t.Fatalf("a whole block: Verify = %+v, %v", rep, err)
			}
		case after:
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("damage at %d with a valid record after it: Verify = %+v, %v; want ErrDamaged", at, rep, err)
			}
		default:
			if err != nil || rep.TornTail == "" {
				t.Fatalf("damage at %d with nothing valid after it: Verify = %+v, %v; want a torn tail", at, rep, err)
			}
		}
	})
}
