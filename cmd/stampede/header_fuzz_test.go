package main

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// FuzzHeaderFlag: no --header value makes the flag panic; one it accepts
// is a token name and a value without control characters, reads back the
// same from the flag's own text, and survives an HTTP/1.1 request written
// and read back unchanged.
func FuzzHeaderFlag(f *testing.F) {
	for _, s := range []string{
		"X-Token: abc", "Authorization: Bearer a,b", " X-A :  padded  ", "X: ", "X:a:b",
		"Bad Name: v", ": v", "X-A", "X: a\r\nInjected: 1", "X: a\x00b", "X: tab\there",
		"X: caf\xc3\xa9", "X: \xff", "Host: example.com", "Host: a b", "X-\x7f: v",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var h headerFlag
		if err := h.Set(s); err != nil {
			if len(h.fields) != 0 {
				t.Fatalf("%q refused but kept", s)
			}
			return
		}
		if len(h.fields) != 1 {
			t.Fatalf("%q: %d fields", s, len(h.fields))
		}
		name, value := h.fields[0][0], h.fields[0][1]
		if !isToken(name) || strings.ContainsFunc(value, isCTL) || strings.TrimSpace(value) != value {
			t.Fatalf("%q accepted as %q: %q", s, name, value)
		}
		var back headerFlag
		if err := back.Set(h.String()); err != nil || back.fields[0] != h.fields[0] {
			t.Fatalf("%q: its own text %q reads back as %v, %v", s, h.String(), back.fields, err)
		}
		if strings.EqualFold(name, "Host") {
			return // the request's Host, checked by net/http when sent
		}
		req, err := http.NewRequest("GET", "http://127.0.0.1/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Add(name, value)
		var wire bytes.Buffer
		if err := req.Write(&wire); err != nil {
			t.Fatalf("%q: request does not write: %v", s, err)
		}
		got, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("%q: request written as %q does not read back: %v", s, wire.String(), err)
		}
		if vs := got.Header.Values(name); len(vs) != 1 || vs[0] != value {
			t.Fatalf("%q: sent %q, server reads %q", s, value, vs)
		}
	})
}
