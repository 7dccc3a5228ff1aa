package redact

import (
	"regexp"
	"strings"
)

// urlInText matches a URL inside free text: a scheme, "://" and what
// follows up to a space, a quote or an angle bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// Text returns a free text (an error's message, a log line) with the
// secrets of every URL in it hidden (URLWith, p.Headers naming more
// secret query parameters), then every one of p.Values scrubbed: what a
// program prints of an error that may quote what the user gave it.
func (p Policy) Text(s string) string {
	if strings.Contains(s, "://") {
		s = urlInText.ReplaceAllStringFunc(s, func(u string) string {
			// A URL quoted by %q ends before its closing quote; one
			// followed by ':' and a reason keeps them out of the URL.
			trail := strings.TrimRight(u, ":,;.)]}")
			return URLWith(trail, p.Headers) + u[len(trail):]
		})
	}
	return Scrub(s, p.Values)
}

// Truncate returns s cut to at most max bytes (at a rune's start), with
// "... (N bytes)" saying how long it was, so an error message never
// echoes a whole file given as a value; s itself when it is not longer.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "... (" + itoa(len(s)) + " bytes)"
}

// itoa writes a non-negative n in decimal.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
