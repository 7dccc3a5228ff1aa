package results

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// encodePacked writes what PackedHistogram.Encode writes, byte for byte.
func TestEncodePackedMatchesEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		values []int64 // recorded once each
		counts []int64 // recorded at value 100+i, counts[i] times
	}{
		{name: "empty"},
		{name: "one value", values: []int64{1}},
		{name: "range ends", values: []int64{1, histMax}},
		{name: "adjacent buckets", values: []int64{2046, 2047, 2048, 2049, 4096}},
		// Counts whose ZigZag form needs each LEB128 length, 9 bytes included.
		{name: "large counts", counts: []int64{1 << 6, 1 << 13, 1 << 20, 1 << 27, 1 << 34, 1 << 41, 1 << 48, 1 << 55, 1 << 60}},
	}
	for range 20 {
		var vs []int64
		for range r.IntN(500) {
			vs = append(vs, 1+r.Int64N(r.Int64N(histMax)+1))
		}
		cases = append(cases, struct {
			name   string
			values []int64
			counts []int64
		}{name: "random", values: vs})
	}
	for _, c := range cases {
		p := newPacked()
		for _, v := range c.values {
			p.RecordValue(v)
		}
		for i, n := range c.counts {
			p.RecordValues(int64(100+i*10), n)
		}
		want, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time with a reused encoder
			got, err := encodePacked(p)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: encodePacked = %q, %v\nwant %q", c.name, got, err, want)
			}
		}
		back, err := decodePacked(string(want))
		if err != nil || back.TotalCount() != p.TotalCount() {
			t.Fatalf("%s: decoding: %v, total %d want %d", c.name, err, back.TotalCount(), p.TotalCount())
		}
	}
}

// A histogram of another geometry is encoded by the library.
func TestEncodePackedOtherGeometry(t *testing.T) {
	p := hdrhistogram.NewPacked(1, 1000, 2)
	p.RecordValue(7)
	want, _ := p.Encode()
	if got, err := encodePacked(p); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encodePacked = %q, %v; want %q", got, err, want)
	}
}

// BenchmarkEncodePacked shows the bytes each encoding allocates, against
// the library's Encode.
func BenchmarkEncodePacked(b *testing.B) {
	p := newPacked()
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		p.RecordValue(1 + r.Int64N(10_000_000))
	}
	b.Run("encodePacked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodePacked(p)
		}
	})
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Encode()
		}
	})
}

// encodeStored makes a valid V2 compressed encoding of stored deflate
// blocks (more than one of them for a payload over 64 KiB) that decodes to
// the same histogram, whose compressed encoding is encodePacked's.
func TestEncodeStored(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 1000, -1} {
		p := newPacked()
		for range n {
			_ = p.RecordValue(1 + rng.Int64N(histMax))
		}
		if n < 0 { // every bucket, with counts of 6 bytes: a payload over 64 KiB
			n = 0
			for v := int64(1); v < histMax; v += max(1, v/2048) {
				_ = p.RecordValues(v, 1<<40)
				n += 1 << 40
			}
		}
		want, err := encodePacked(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := encodeStored(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := decodePacked(string(b))
		if err != nil {
			t.Fatalf("%d values: %v", n, err)
		}
		if n > 1<<40 && len(b) < 4*(maxStoredBlock+8)/3 {
			t.Errorf("%d values: a stored encoding of %d bytes is not more than one block", n, len(b))
		}
		got, err := encodePacked(q)
		if err != nil || string(got) != string(want) || q.TotalCount() != int64(n) {
			t.Errorf("%d values: stored encoding decodes to %d values, or another histogram (%v)", n, q.TotalCount(), err)
		}
	}
}
