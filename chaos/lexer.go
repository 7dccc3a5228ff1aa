package chaos

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stampede-dev/stampede/fault"
)

// SyntaxError is a schedule that does not parse, or that parses but says
// something impossible (a negative duration, loss above 100%). Line and Col
// are 1-based; Col counts characters, not bytes.
type SyntaxError struct {
	// Line is the line of the offending word.
	Line int
	// Col is the column of the offending word (or of the point where a
	// missing word was expected).
	Col int
	// Msg says what was expected and what was found.
	Msg string
}

// Error returns one line: `chaos: line 1, col 18: expected ...`.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("chaos: line %d, col %d: %s", e.Line, e.Col, e.Msg)
}

// token is one word of the source: a run of characters other than white
// space, ";" and "#".
type token struct {
	text      string
	line, col int // 1-based; col in runes
	off       int // byte offset of the word in the source
}

// entryWords are the words of one entry, and the position just after them
// (the separator, or the end of the input) for "found end of entry" errors.
type entryWords struct {
	words []token
	end   token
}

// scan splits src into entries of words. Entries end at ";" or a newline;
// "#" starts a comment that runs to the end of the line. Empty entries
// (blank lines, ";;") are dropped. Scanning cannot fail: every character
// either separates words or belongs to one, and the parser judges the words.
// It stops once it holds more than limit entries, so that an oversized
// schedule costs no more than its first limit+1 entries.
func scan(src string, limit int) []entryWords {
	var (
		entries   []entryWords
		cur       entryWords
		line, col = 1, 1
		comment   bool  // inside a comment
		hash      token // where the comment started
		word      = -1  // byte offset of the word being read, -1 if none
		wordTok   token
	)
	endWord := func(off int) {
		if word >= 0 {
			wordTok.text = src[word:off]
			cur.words = append(cur.words, wordTok)
			word = -1
		}
	}
	endEntry := func(off int) {
		endWord(off)
		if len(cur.words) > 0 {
			cur.end = token{line: line, col: col, off: off}
			if comment {
				cur.end = hash // the entry ended where its comment began
			}
			entries = append(entries, cur)
		}
		cur = entryWords{}
	}
	for off := 0; off < len(src); {
		r, size := utf8.DecodeRuneInString(src[off:])
		switch {
		case r == '\n':
			endEntry(off)
			comment = false
		case comment:
		case r == ';':
			endEntry(off)
		case r == '#':
			endWord(off)
			comment, hash = true, token{line: line, col: col, off: off}
		case unicode.IsSpace(r):
			endWord(off)
		default:
			if word < 0 {
				word = off
				wordTok = token{line: line, col: col, off: off}
			}
		}
		off += size
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		if len(entries) > limit {
			return entries
		}
	}
	endEntry(len(src))
	return entries
}

// errorf returns a *SyntaxError at t.
func errorf(t token, format string, args ...any) error {
	return &SyntaxError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

// found describes a word for "found ..." in a message.
func found(t token, ok bool) string {
	if !ok {
		return "end of entry"
	}
	return strconv.Quote(clip(t.text))
}

// value is the part of a key=value word after "=", positioned at its own
// column so errors point at the value.
func value(t token, key string) token {
	n := len(key) + 1
	return token{text: t.text[n:], line: t.line, col: t.col + utf8.RuneCountInString(key) + 1, off: t.off + n}
}

// quoteValue describes a value for "found ...": quoted, or "nothing".
func quoteValue(v token) string {
	if v.text == "" {
		return "nothing"
	}
	return strconv.Quote(clip(v.text))
}

// Bounds on durations, for duration().
const (
	nonNegative = iota
	positive
)

// duration parses t as a Go duration written after the word `after`.
// A value of a key=value word arrives as its own token.
func duration(t token, ok bool, after string, bound int) (time.Duration, error) {
	if !ok {
		return 0, errorf(t, "expected a duration after %q, found end of entry", after)
	}
	if t.text == "" {
		return 0, errorf(t, "expected a duration after %q, found nothing (write %s1s, without spaces)", after, after)
	}
	d, err := time.ParseDuration(t.text)
	if err != nil {
		if _, rest, ok := splitDecimal(t.text); ok && rest == "" {
			return 0, errorf(t, "expected a duration after %q, found %q (a duration needs a unit, as in %ss)", after, t.text, t.text)
		}
		return 0, errorf(t, "expected a duration after %q, found %q", after, t.text)
	}
	switch {
	case d < 0:
		return 0, errorf(t, "expected a non-negative duration after %q, found %q", after, t.text)
	case bound == positive && d == 0:
		return 0, errorf(t, "expected a positive duration after %q, found %q", after, t.text)
	}
	return d, nil
}

// The syntax of values inside words: plain numbers, rates, bandwidths and
// percentages. Each parser returns "" or the "expected ..." part of an error
// message; the caller adds where and what was found.

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// splitDecimal splits s into a leading decimal number (digits with at most
// one ".") and the rest. ok is false when there is no digit. The number has
// no sign, exponent, "inf" or "nan": strconv.ParseFloat alone would accept
// those.
func splitDecimal(s string) (num, rest string, ok bool) {
	i, dot, digits := 0, -1, 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
			continue
		case c == '.' && dot < 0:
			dot = i
			continue
		}
		break
	}
	return s[:i], s[i:], digits > 0
}

// maxAcceptRate bounds accept-rate; no target accepts faster. minAcceptRate
// is the least non-zero one a target paces.
const (
	maxAcceptRate = fault.MaxAcceptRate
	minAcceptRate = fault.MinAcceptRate
)

// parseRate parses an accept rate "N/s", N a decimal number.
func parseRate(s string) (float64, string) {
	const want = "expected a rate like 100/s, or unlimited,"
	num, rest, ok := splitDecimal(s)
	if !ok || rest != "/s" {
		return 0, want
	}
	r, err := strconv.ParseFloat(num, 64)
	if err != nil || r > maxAcceptRate {
		return 0, "expected a rate of at most 1000000000/s"
	}
	if r != 0 && r < minAcceptRate {
		return 0, "expected a rate of 0 (unlimited) or at least 0.001/s"
	}
	return r, ""
}

// rateUnits are the units of bandwidth=, in bytes. Decimal prefixes are
// powers of 1000, binary ones (KiB) of 1024; bits are an eighth of a byte.
var rateUnits = map[string]float64{
	"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
	"bit": 1.0 / 8, "kbit": 1e3 / 8, "Kbit": 1e3 / 8, "Mbit": 1e6 / 8, "Gbit": 1e9 / 8,
}

// parseBandwidth parses a rate such as "1MB/s", "512KiB/s" or "100kbit/s"
// into whole bytes per second, rounded to the nearest byte.
func parseBandwidth(s string) (int64, string) {
	const want = "expected a rate like 1MB/s, 512KB/s or 100kbit/s (units B, KB, MB, GB, KiB, MiB, GiB, bit, kbit, Mbit, Gbit)"
	num, rest, ok := splitDecimal(s)
	unit, perSecond := strings.CutSuffix(rest, "/s")
	mult, known := rateUnits[unit]
	if !ok || !perSecond || !known {
		return 0, want
	}
	v, err := strconv.ParseFloat(num, 64)
	bps := math.Round(v * mult)
	switch {
	case err != nil || bps > fault.MaxBandwidth:
		return 0, "expected a rate of at most 1000GB/s"
	case bps < 1:
		return 0, "expected a rate of at least 1B/s"
	}
	return int64(bps), ""
}

// parsePercent parses a percentage "P%" with 0 < P <= 100 and at most
// fault.LossDecimals decimals (trailing zeros aside) into a probability P/100.
func parsePercent(s string) (float64, string) {
	num, rest, ok := splitDecimal(s)
	if !ok || rest != "%" {
		return 0, "expected a percentage like 1% or 0.5%"
	}
	if _, frac, _ := strings.Cut(num, "."); len(strings.TrimRight(frac, "0")) > fault.LossDecimals {
		return 0, "expected a percentage with at most 6 decimals"
	}
	p, err := strconv.ParseFloat(num, 64)
	if err != nil || p <= 0 || p > 100 {
		return 0, "expected a percentage above 0% and at most 100%"
	}
	return p / 100, ""
}
