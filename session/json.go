package session

import (
	"bytes"
	"encoding/json"
)

// The JSON the servers send is small and flat: these helpers find one
// key's value in it without decoding the whole, so a frame costs no
// allocation.

// field returns the raw value of the first "key" in p: a string's
// contents without its quotes (escapes kept), else the value's text. ok is
// false when the key is missing.
func field(p []byte, key string) (v []byte, ok bool) {
	for off := 0; off < len(p); {
		i := bytes.Index(p[off:], []byte(key))
		if i < 0 {
			return nil, false
		}
		i += off
		off = i + len(key)
		if i == 0 || p[i-1] != '"' || off >= len(p) || p[off] != '"' {
			continue
		}
		j := skipSpace(p, off+1)
		if j >= len(p) || p[j] != ':' {
			continue
		}
		return value(p, skipSpace(p, j+1))
	}
	return nil, false
}

// value returns the JSON value starting at p[i].
func value(p []byte, i int) ([]byte, bool) {
	if i >= len(p) {
		return nil, false
	}
	if p[i] == '"' {
		for j := i + 1; j < len(p); j++ {
			switch p[j] {
			case '\\':
				j++
			case '"':
				return p[i+1 : j], true
			}
		}
		return nil, false
	}
	depth := 0
	for j := i; j < len(p); j++ {
		switch p[j] {
		case '"':
			for j++; j < len(p) && p[j] != '"'; j++ {
				if p[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return bytes.TrimSpace(p[i:j]), true
			}
			depth--
			if depth == 0 {
				return p[i : j+1], true
			}
		case ',':
			if depth == 0 {
				return bytes.TrimSpace(p[i:j]), true
			}
		}
	}
	return bytes.TrimSpace(p[i:]), true
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}

// is reports whether key's value in p is the string s.
func is(p []byte, key, s string) bool {
	v, ok := field(p, key)
	return ok && string(v) == s
}

// lastString returns the last element of the JSON array p when it is a
// string, its contents without quotes.
func lastString(p []byte) ([]byte, bool) {
	p = bytes.TrimSpace(p)
	if len(p) < 2 || p[len(p)-1] != ']' {
		return nil, false
	}
	end := len(p) - 2
	for end >= 0 && (p[end] == ' ' || p[end] == '\n' || p[end] == '\t' || p[end] == '\r') {
		end--
	}
	if end < 1 || p[end] != '"' {
		return nil, false
	}
	for i := end - 1; i >= 0; i-- {
		if p[i] != '"' {
			continue
		}
		bs := 0
		for k := i - 1; k >= 0 && p[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			if k := skipBack(p, i-1); k >= 0 && (p[k] == ',' || p[k] == '[') {
				return p[i+1 : end], true
			}
			return nil, false
		}
	}
	return nil, false
}

func skipBack(p []byte, i int) int {
	for i >= 0 && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i--
	}
	return i
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// compactJSON writes raw without insignificant space.
func compactJSON(dst *bytes.Buffer, raw []byte) error { return json.Compact(dst, raw) }
