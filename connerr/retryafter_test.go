package connerr

import (
	"math"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	// now is the IMF-fixdate example of RFC 9110, minus 2 s.
	now := time.Date(1994, time.November, 6, 8, 49, 35, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		value string
		max   time.Duration
		want  time.Duration
		ok    bool
	}{
		{"delay-seconds", "2", 0, 2 * time.Second, true},
		{"zero", "0", 0, 0, true},
		{"surrounding whitespace", " 120 ", 0, 120 * time.Second, true},
		{"clamped to max", "3600", time.Minute, time.Minute, true},
		{"huge value saturates, not negative", "99999999999999999999999", 0, math.MaxInt64, true},
		{"huge value clamped", "9223372036854775807", time.Hour, time.Hour, true},
		{"IMF-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 0, 2 * time.Second, true},
		{"rfc850 date", "Sunday, 06-Nov-94 08:49:37 GMT", 0, 2 * time.Second, true},
		{"asctime date", "Sun Nov  6 08:49:37 1994", 0, 2 * time.Second, true},
		{"date in the past", "Sun, 06 Nov 1994 08:49:00 GMT", 0, 0, true},
		{"far date clamped", "Fri, 31 Dec 9999 23:59:59 GMT", time.Minute, time.Minute, true},
		{"empty", "", 0, 0, false},
		{"negative", "-5", 0, 0, false},
		{"plus sign", "+5", 0, 0, false},
		{"fraction", "1.5", 0, 0, false},
		{"garbage", "soon", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.value, now, tc.max)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"2", "99999999999999999999", "Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "", "-1"} {
		f.Add(s)
	}
	now := time.Date(2026, time.November, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := ParseRetryAfter(v, now, time.Hour)
		if got < 0 || got > time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %v outside [0, 1h]", v, got)
		}
		if !ok && got != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok false", v, got)
		}
	})
}
