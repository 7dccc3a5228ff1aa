package track

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
)

// Uints is a list of unsigned integers that travels compactly: as JSON it is
// one base64 string of the zigzag-encoded differences between neighbours as
// varints, so a sorted list of close sequence numbers costs about one byte
// each instead of a decimal number and a comma. The empty list is "".
type Uints []uint64

// MarshalJSON encodes u as a base64 string of delta varints.
func (u Uints) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, len(u)*2)
	var prev uint64
	for _, v := range u {
		d := int64(v - prev) // wraps: the difference as a signed value
		buf = binary.AppendVarint(buf, d)
		prev = v
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(buf))
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (u *Uints) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("track: uints: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("track: uints: %w", err)
	}
	out := make(Uints, 0, len(raw))
	var prev uint64
	for len(raw) > 0 {
		d, n := binary.Varint(raw)
		if n <= 0 {
			return fmt.Errorf("track: uints: bad varint at byte %d", len(b)-len(raw))
		}
		raw = raw[n:]
		prev += uint64(d)
		out = append(out, prev)
	}
	*u = slices.Clip(out)
	return nil
}

// contains reports whether the sorted list s holds v.
func contains(s []uint64, v uint64) bool {
	_, ok := slices.BinarySearch(s, v)
	return ok
}

// union returns the sorted union of the sorted lists a and b, without
// repeats.
func union(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
