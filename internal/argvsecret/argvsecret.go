// Package argvsecret overwrites the secrets typed on the command line in
// the process's own argv as the process starts, before the packages that
// take long to initialise (docs/secrets.md "Command lines"): imported by
// cmd/stampede for its init alone, it keeps a copy of the arguments for
// the program to parse.
package argvsecret

import (
	"os"
	"strings"
	"unsafe"

	"github.com/stampede-dev/stampede/internal/redact/names"
)

// Args is a copy of os.Args as the program was started, secrets and all,
// for the program to parse: os.Args itself is overwritten by init.
var Args []string

func init() {
	Args = cloneArgs(os.Args)
	hideArgSecrets(os.Args)
}

// hideArgSecrets overwrites, in place, the secrets a user typed on the
// command line, so that `ps` and /proc/PID/cmdline show '*' in their place
// from the moment it runs (as mysql does with -pPASSWORD): the values of
// Authorization, Cookie, Proxy-Authorization and --secret-header NAME
// headers given with --header or -H; in every argument that holds a URL
// (--url, --store, --nats, the http command's URL), its user info and the
// values of its secret query parameters (names.Match, or named by
// --secret-header); the secret fields of a --data body (JSON string values
// and form fields under a secret name); and the whole --restart-cmd, which
// may carry a bare token; and every --otlp-header value. The process's
// command line is the memory os.Args' strings point into (the runtime does
// not copy argv), so the caller must parse a copy (cloneArgs) and call this only on os.Args,
// never on strings in read-only memory. Until it runs (the first moments
// of the process) the secrets are visible; docs/secrets.md says so.
func hideArgSecrets(args []string) {
	var extra []string
	flagValues(args, []string{"secret-header"}, func(v string, _ int) { extra = append(extra, v) })
	flagValues(args, []string{"header", "H"}, func(v string, _ int) {
		name, value, ok := strings.Cut(v, ":")
		if ok && secretHeader(strings.TrimSpace(name), extra) {
			blank(value)
		}
	})
	flagValues(args, []string{"restart-cmd"}, func(v string, _ int) { blank(v) })
	flagValues(args, []string{"otlp-header"}, func(v string, _ int) {
		if _, value, ok := strings.Cut(v, "="); ok {
			blank(value) // every OTLP header is secret
		}
	})
	flagValues(args, []string{"data", "body"}, func(v string, _ int) { blankBody(v, extra) })
	// A libpq key=value string is refused, but is typed all the same.
	flagValues(args, []string{"store"}, func(v string, _ int) {
		if !strings.Contains(v, "://") {
			blankPairs(v, " ", extra)
		}
	})
	for _, a := range args[1:] {
		if strings.Contains(a, "://") {
			blankURL(a, extra)
		}
	}
}

// blankURL overwrites the user info and the secret query values of the
// URL in s (which may be a flag=URL argument), working on the raw text so that
// what is overwritten is exactly what was typed.
func blankURL(s string, extra []string) {
	i := strings.Index(s, "://")
	rest := s[i+3:]
	// The user info ends at the last '@' before the query: a password
	// may hold a '/' (then the URL does not parse, but was typed).
	end := strings.IndexAny(rest, "?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at > 0 {
		blank(rest[:at])
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return
	}
	query := rest[q+1:]
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	blankPairs(query, "&", extra)
}

// blankPairs overwrites the value of every name=value pair of s (split on
// sep) whose name is secret.
func blankPairs(s, sep string, extra []string) {
	for len(s) > 0 {
		pair, tail, _ := strings.Cut(s, sep)
		if name, value, ok := strings.Cut(pair, "="); ok && secretArgName(name, extra) {
			blank(value)
		}
		s = tail
	}
}

// blankBody overwrites the secret fields of a request body given on the
// command line: in a JSON text, every string under a secret key at any
// depth (as the files' redaction hides them: "api_keys":["K"],
// "password":{"value":"P"}); in a form (a=1&password=x), the values of
// secret fields. @FILE names a file: nothing to hide.
func blankBody(v string, extra []string) {
	if strings.HasPrefix(v, "@") {
		return
	}
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		blankJSON(v, extra)
		return
	}
	blankPairs(v, "&", extra)
}

// blankJSON overwrites every string of a JSON text that is under a
// secret key, however deep. It is a scanner, not a parser: nothing in s
// is checked; a string is a key when it comes first in an object or
// after a ',' in one.
func blankJSON(s string, extra []string) {
	type frame struct{ object, secret bool }
	var stack []frame
	inSecret := func() bool { return len(stack) > 0 && stack[len(stack)-1].secret }
	inObject := func() bool { return len(stack) > 0 && stack[len(stack)-1].object }
	expectKey, next := false, false // next: the coming value is under a secret key
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '{', '[':
			stack = append(stack, frame{object: c == '{', secret: next || inSecret()})
			expectKey, next = c == '{', false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey, next = false, false
		case ',':
			expectKey, next = inObject(), false
		case '"':
			end := stringEnd(s, i+1)
			str := s[i+1 : end]
			if expectKey && inObject() {
				next, expectKey = secretKey(str, extra), false
			} else {
				if next || inSecret() {
					blank(str)
				}
				next = false
			}
			i = end
		}
	}
}

// secretKey reports whether the values under a JSON key are secret, as
// internal/redact judges them: a secret name, unless the key names a
// list of headers or a file.
func secretKey(key string, extra []string) bool {
	k := strings.ToLower(key)
	if strings.Contains(k, "header") || strings.HasSuffix(k, "file") {
		return false
	}
	return secretHeader(key, extra)
}

// stringEnd returns the index of the quote that closes the JSON string
// starting at i (after its opening quote), or len(s).
func stringEnd(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
		case '"':
			return i
		default:
			i++
		}
	}
	return len(s)
}

// secretHeader is redact.IsSecretHeader over the default lists: a header
// in names.DefaultHeaders or extra, or whose name holds a secret word.
func secretHeader(name string, extra []string) bool {
	for _, h := range append(names.DefaultHeaders[:len(names.DefaultHeaders):len(names.DefaultHeaders)], extra...) {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return names.Match(name, names.Words, names.NotSecret)
}

// secretArgName is a name holding a secret word (names.Match), or one of
// extra, without regard to case.
func secretArgName(name string, extra []string) bool {
	if names.Match(name, names.Words, names.NotSecret) {
		return true
	}
	for _, e := range extra {
		if strings.EqualFold(e, name) {
			return true
		}
	}
	return false
}

// flagValues calls fn with the value of every occurrence of the named
// flags in args (-name V, --name V, -name=V, --name=V) and its index.
func flagValues(args, names []string, fn func(value string, index int)) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		for _, n := range names {
			if name != n {
				continue
			}
			switch {
			case hasValue:
				fn(value, i)
			case i+1 < len(args):
				i++
				fn(args[i], i)
			}
		}
	}
}

// blank overwrites the bytes of s with '*'. s must be writable memory.
func blank(s string) {
	if s == "" {
		return
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for i := range b {
		b[i] = '*'
	}
}

// cloneArgs returns a copy of args whose strings share no memory with
// them, for parsing while hideArgSecrets overwrites the originals.
func cloneArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.Clone(a)
	}
	return out
}
