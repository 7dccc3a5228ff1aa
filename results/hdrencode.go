package results

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"hash/adler32"
	"math"
	"math/bits"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// encodePacked is PackedHistogram.Encode, byte for byte, for histograms of
// NewHistogram's range and precision, with a pooled compressor.
//
// Encode builds a new zlib writer at BestCompression for every call: about
// 0.8 MB of compressor state, garbage at once. A loadgen seals several
// interval histograms a second and merges them into its report, so that
// garbage raised its heap goal: at 100,000 clients each of 6 loadgen
// processes grew by about 7 MiB of RSS in the ramp's first 5 s, by 4 with
// this encoder (docs/sizing.md, "Memory per connection"). Here the
// writer is reset and reused; the V2 payload (zero runs and ZigZag LEB128
// counts) is written from the histogram's populated buckets, as the
// library does. Histograms of another geometry go through Encode.
func encodePacked(p *hdrhistogram.PackedHistogram) ([]byte, error) {
	return encodeWith(p, false)
}

// encodeStored is encodePacked with the zlib stream in stored deflate
// blocks (uncompressed, RFC 1951 3.2.4): still the V2 compressed encoding,
// which every zlib reader decodes, but made without a compressor. A
// compressor at any level holds about 0.8 MB (its hash chains are part of
// flate's Writer) and clears 640 KB of them on every reset; a loadgen
// worker seals and merges its interval histograms this way instead, so it
// never holds one (NewDrainStream). The coordinator's merges and the .hlog
// files compress again. The payload of an interval is a few hundred bytes
// to a few KiB, so this costs at most about twice that on the wire.
func encodeStored(p *hdrhistogram.PackedHistogram) ([]byte, error) {
	return encodeWith(p, true)
}

func encodeWith(p *hdrhistogram.PackedHistogram, stored bool) ([]byte, error) {
	if p.LowestTrackableValue() != histMin || p.HighestTrackableValue() != histMax || p.SignificantFigures() != histSigFigs {
		return p.Encode()
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.inner.Reset()
	var hdr [encodingHeaderSize]byte
	e.inner.Write(hdr[:]) // the payload's length is filled in below
	next := int32(0)      // counts index the payload has reached
	p.ForEachBucket(func(value, count int64) bool {
		i := countsIndexFor(value)
		if count != 0 {
			e.zeros(i - next)
			e.count(count)
			next = i + 1
		}
		return true
	})
	// The payload runs to the last populated bucket (a zero count
	// included), or over index 0 when there is none, as Encode's does.
	limit := int32(1)
	if p.Populated() > 0 {
		limit = countsIndexFor(p.Max()) + 1
	}
	e.zeros(limit - next)
	inner := e.inner.Bytes()
	binary.BigEndian.PutUint32(inner[0:], uint32(v2EncodingCookie))
	binary.BigEndian.PutUint32(inner[4:], uint32(len(inner)-encodingHeaderSize))
	binary.BigEndian.PutUint32(inner[8:], 0) // normalizingIndexOffset
	binary.BigEndian.PutUint32(inner[12:], uint32(histSigFigs))
	binary.BigEndian.PutUint64(inner[16:], uint64(histMin))
	binary.BigEndian.PutUint64(inner[24:], uint64(histMax))
	binary.BigEndian.PutUint64(inner[32:], math.Float64bits(1)) // integer counts

	e.out.Reset()
	e.out.Write(make([]byte, 8)) // cookie and compressed length, below
	if stored {
		writeStoredZlib(&e.out, inner)
	} else {
		if e.zw == nil {
			e.zw, _ = zlib.NewWriterLevel(nil, zlib.BestCompression) // a valid level cannot fail
		}
		e.zw.Reset(&e.out)
		e.zw.Write(inner) // writes to a bytes.Buffer do not fail
		e.zw.Close()
	}
	out := e.out.Bytes()
	binary.BigEndian.PutUint32(out[0:], uint32(v2CompressedEncodingCookie))
	binary.BigEndian.PutUint32(out[4:], uint32(len(out)-8))
	b := make([]byte, base64.StdEncoding.EncodedLen(len(out)))
	base64.StdEncoding.Encode(b, out)
	return b, nil
}

// maxStoredBlock is the most bytes one stored deflate block holds.
const maxStoredBlock = 65535

// writeStoredZlib writes data to w as a zlib stream (RFC 1950) of stored
// deflate blocks: the header (deflate, 32 KiB window, no dictionary,
// level "fastest"), blocks of at most maxStoredBlock bytes each with its
// length and the length's complement, the last marked final, then the
// Adler-32 of data.
func writeStoredZlib(w *bytes.Buffer, data []byte) {
	w.Write([]byte{0x78, 0x01}) // (0x78<<8 | 0x01) % 31 == 0
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], adler32.Checksum(data))
	for {
		n := min(len(data), maxStoredBlock)
		var h [5]byte
		if n == len(data) {
			h[0] = 1 // BFINAL; BTYPE 00: stored
		}
		binary.LittleEndian.PutUint16(h[1:], uint16(n))
		binary.LittleEndian.PutUint16(h[3:], ^uint16(n))
		w.Write(h[:])
		w.Write(data[:n])
		data = data[n:]
		if h[0] == 1 {
			break
		}
	}
	w.Write(tail[:])
}

// The V2 format's constants (hdrhistogram-go's hdr_encoding.go; the
// HdrHistogram encoding spec).
const (
	encodingHeaderSize         = 40
	v2EncodingCookie           = 0x1c849303 | 0x10
	v2CompressedEncodingCookie = 0x1c849304 | 0x10
	// NewHistogram's geometry: lowest value 1 (unit magnitude 0), three
	// significant digits (2,048 sub-buckets, half of them 2^10).
	subBucketHalfCountMagnitude = 10
	subBucketMask               = 1<<(subBucketHalfCountMagnitude+1) - 1
)

// countsIndexFor is the flat counts index of value v in NewHistogram's
// geometry.
func countsIndexFor(v int64) int32 {
	bucket := int32(64-bits.LeadingZeros64(uint64(v|subBucketMask))) - (subBucketHalfCountMagnitude + 1)
	sub := int32(v >> uint(bucket))
	return (bucket+1)<<subBucketHalfCountMagnitude + sub - 1<<subBucketHalfCountMagnitude
}

// encoder is one encoding's buffers and compressor, pooled.
type encoder struct {
	inner, out bytes.Buffer
	zw         *zlib.Writer
	leb        [9]byte
}

// encoders hold their compressor only once a compressed encoding needed
// it (encodeStored needs none).
var encoders = sync.Pool{New: func() any { return &encoder{} }}

// zeros writes a run of n zero counts: one zero as a count, more as a
// negative run length.
func (e *encoder) zeros(n int32) {
	switch {
	case n == 1:
		e.count(0)
	case n > 1:
		e.count(-int64(n))
	}
}

// count writes v ZigZag encoded in HdrHistogram's LEB128 (at most 9 bytes,
// the ninth holding 8 bits).
func (e *encoder) count(v int64) {
	u := uint64((v << 1) ^ (v >> 63))
	n := 0
	for ; n < 8 && u>>7 != 0; n++ {
		e.leb[n] = byte(u&0x7f) | 0x80
		u >>= 7
	}
	e.leb[n] = byte(u)
	e.inner.Write(e.leb[:n+1])
}
