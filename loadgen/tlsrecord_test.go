package loadgen

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"strings"
	"testing"
)

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExpandLabelRFC8448: HKDF-Expand-Label gives the keys, ivs and
// finished key of RFC 8448's simple 1-RTT handshake (section 3).
func TestExpandLabelRFC8448(t *testing.T) {
	for _, tc := range []struct{ secret, label, want string }{
		{"b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38", "key", "3f ce 51 60 09 c2 17 27 d0 f2 e4 e8 6e e4 03 bc"},
		{"b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38", "iv", "5d 31 3e b2 67 12 76 ee 13 00 0b 30"},
		{"b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38", "finished", "00 8d 3b 66 f8 16 ea 55 9f 96 b5 37 e8 85 c3 1f c0 68 bf 49 2c 65 2f 01 f2 88 a1 d8 cd c1 9f c8"},
		{"b3 ed db 12 6e 06 7f 35 a7 80 b3 ab f4 5e 2d 8f 3b 1a 95 07 38 f5 2e 96 00 74 6a 0e 27 a5 5a 21", "key", "db fa a6 93 d1 76 2c 5b 66 6a f5 d9 50 25 8d 01"},
		{"a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43", "key", "9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56"},
		{"a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43", "iv", "cf 78 2b 88 dd 83 54 9a ad f1 e9 84"},
	} {
		want := hexBytes(t, tc.want)
		if got := expandLabel(sha256.New, hexBytes(t, tc.secret), tc.label, len(want)); !bytes.Equal(got, want) {
			t.Errorf("%q of %.11s: %x, want %x", tc.label, tc.secret, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordRoundTrip: every suite the record layer takes seals and
// opens records, a message longer than one record split in several; a
// record opened at the wrong sequence number fails as a bad MAC.
func TestRecordRoundTrip(t *testing.T) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		var k recordKeys
		k.suite = suite
		copy(k.wr.secret[:], "a write secret of forty-eight bytes, more or less")
		k.rd = k.wr                                           // open what was sealed
		msg := bytes.Repeat([]byte("0123456789abcdef"), 1500) // 24,000 bytes: two records
		recs := k.seal(nil, recordApplication, msg)
		recs = k.seal(recs, recordAlert, []byte{1, alertCloseNotify})
		o := opener{k: &k}
		var got []byte
		var types []byte
		for len(recs) > 0 {
			n, err := recordLen(recs)
			if err != nil || n == 0 || n > len(recs) {
				t.Fatalf("%s: record length %d, %v", tls.CipherSuiteName(suite), n, err)
			}
			typ, pt, err := o.open(recs[:n])
			if err != nil {
				t.Fatalf("%s: %v", tls.CipherSuiteName(suite), err)
			}
			types = append(types, typ)
			if typ == recordApplication {
				got = append(got, pt...)
			}
			recs = recs[n:]
		}
		if !bytes.Equal(got, msg) || !bytes.Equal(types, []byte{recordApplication, recordApplication, recordAlert}) {
			t.Errorf("%s: types %v, %d bytes back of %d", tls.CipherSuiteName(suite), types, len(got), len(msg))
		}
		k.rd.seq = 0
		rec := k.seal(nil, recordApplication, []byte("late"))
		if _, _, err := (&opener{k: &k}).open(rec); err != errBadRecordMAC {
			t.Errorf("%s: a record opened at sequence number 0, sealed at 4: %v, want a bad MAC", tls.CipherSuiteName(suite), err)
		}
	}
}
