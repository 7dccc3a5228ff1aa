package httpretry

import (
	"errors"
	"math"
	"testing"
	"time"
)

// maxDuration is the longest representable wait, where huge hints saturate.
const maxDuration = time.Duration(math.MaxInt64)

// now is the fixed "current time" of the Retry-After tests: 1994-11-06
// 08:49:30 UTC, seven seconds before RFC 9110's example date.
var now = time.Date(1994, time.November, 6, 8, 49, 30, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want time.Duration
		bad  bool
	}{
		// delay-seconds, the common form.
		{name: "zero seconds", in: "0", want: 0},
		{name: "seconds", in: "120", want: 120 * time.Second},
		{name: "leading zeros", in: "007", want: 7 * time.Second},
		// OWS around a field value is not part of it.
		{name: "surrounding whitespace", in: " \t5\t ", want: 5 * time.Second},
		// The largest whole-second count a Duration holds is exact...
		{name: "largest representable", in: "9223372036", want: 9223372036 * time.Second},
		// ...one more saturates: go-retryablehttp multiplies and wraps negative.
		{name: "just above representable", in: "9223372037", want: maxDuration},
		{name: "twenty digits saturate", in: "99999999999999999999", want: maxDuration},
		{name: "hundred digits saturate", in: "1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000", want: maxDuration},

		// The three HTTP-date forms of RFC 9110 5.6.7, all 7 s after now.
		{name: "IMF-fixdate", in: "Sun, 06 Nov 1994 08:49:37 GMT", want: 7 * time.Second},
		{name: "rfc850 (go-retryablehttp rejects it)", in: "Sunday, 06-Nov-94 08:49:37 GMT", want: 7 * time.Second},
		{name: "asctime (go-retryablehttp rejects it)", in: "Sun Nov  6 08:49:37 1994", want: 7 * time.Second},
		// A date now or in the past means "retry now", never a negative wait.
		{name: "date equal to now", in: "Sun, 06 Nov 1994 08:49:30 GMT", want: 0},
		{name: "past date", in: "Sat, 05 Nov 1994 08:49:37 GMT", want: 0},
		{name: "far past date", in: "Mon, 01 Jan 0001 00:00:00 GMT", want: 0},
		// A date beyond the Duration range saturates.
		{name: "far future date", in: "Fri, 31 Dec 9999 23:59:59 GMT", want: maxDuration},

		// Everything else is an error.
		{name: "empty", in: "", bad: true},
		{name: "only whitespace", in: "  ", bad: true},
		{name: "negative", in: "-5", bad: true},
		{name: "plus sign", in: "+5", bad: true},
		{name: "float", in: "1.5", bad: true},
		{name: "exponent", in: "1e3", bad: true},
		{name: "unit suffix", in: "5s", bad: true},
		{name: "inner space", in: "1 2", bad: true},
		{name: "hex", in: "0x10", bad: true},
		{name: "non-ASCII digits", in: "５", bad: true},
		{name: "date without zone", in: "Sun, 06 Nov 1994 08:49:37", bad: true},
		{name: "RFC 3339", in: "1994-11-06T08:49:37Z", bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRetryAfter(tc.in, now)
			if tc.bad {
				if !errors.Is(err, ErrBadRetryAfter) {
					t.Fatalf("ParseRetryAfter(%q) = %v, %v; want an ErrBadRetryAfter", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCapRetryAfter(t *testing.T) {
	cases := []struct {
		name        string
		hint, limit time.Duration
		want        time.Duration
		tooLong     bool
	}{
		{name: "below the cap", hint: 2 * time.Second, limit: 30 * time.Second, want: 2 * time.Second},
		// The cap itself is allowed.
		{name: "at the cap", hint: 30 * time.Second, limit: 30 * time.Second, want: 30 * time.Second},
		{name: "above the cap gives up", hint: time.Hour, limit: 30 * time.Second, tooLong: true},
		{name: "saturated hint gives up", hint: maxDuration, limit: time.Minute, tooLong: true},
		// No cap: the hint passes unchanged.
		{name: "no cap", hint: time.Hour, limit: 0, want: time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CapRetryAfter(tc.hint, tc.limit)
			if tc.tooLong {
				var te *RetryAfterTooLongError
				if !errors.Is(err, ErrRetryAfterTooLong) || !errors.As(err, &te) || te.Hint != tc.hint || te.Cap != tc.limit || got != 0 {
					t.Fatalf("CapRetryAfter(%v, %v) = %v, %v; want a RetryAfterTooLongError", tc.hint, tc.limit, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CapRetryAfter(%v, %v) = %v, %v; want %v", tc.hint, tc.limit, got, err, tc.want)
			}
		})
	}
}

func TestRetryAfterTooLongMessage(t *testing.T) {
	err := &RetryAfterTooLongError{Hint: time.Hour, Cap: 30 * time.Second}
	const want = "server asked to retry after 1h0m0s, above the 30s cap"
	if err.Error() != want {
		t.Fatalf("Error() = %q; want %q", err.Error(), want)
	}
}

// FuzzParseRetryAfter checks the parser's invariants on any input: it never
// panics, never returns a negative wait, fails only with ErrBadRetryAfter,
// and the capped result is never above the cap. The seeds are the inputs
// go-retryablehttp gets wrong, plus the forms RFC 9110 requires.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{
		"0", "5", "120",
		"99999999999999999999", // overflows a seconds multiplication
		"9223372037",           // one past the largest Duration in seconds
		"-1", "-99999999999999999999",
		" 5 ", "\t5", "5\n", "",
		"1.5", "1e3", "+5", "0x10",
		"Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
		"Sunday, 06-Nov-94 08:49:37 GMT", // rfc850
		"Sun Nov  6 08:49:37 1994",       // asctime
		"Mon, 01 Jan 0001 00:00:00 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT",
	} {
		f.Add(s, int64(30*time.Second))
	}
	f.Fuzz(func(t *testing.T, v string, limit int64) {
		d, err := ParseRetryAfter(v, now)
		if err != nil {
			if !errors.Is(err, ErrBadRetryAfter) || d != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v", v, d, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v: negative", v, d)
		}
		c, err := CapRetryAfter(d, time.Duration(limit))
		if limit > 0 && c > time.Duration(limit) {
			t.Fatalf("CapRetryAfter(%v, %v) = %v: above the cap", d, limit, c)
		}
		if c < 0 || (err == nil && c != d) || (err != nil && !errors.Is(err, ErrRetryAfterTooLong)) {
			t.Fatalf("CapRetryAfter(%v, %v) = %v, %v", d, limit, c, err)
		}
	})
}
