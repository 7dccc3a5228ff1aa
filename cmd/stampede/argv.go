package main

import (
	"net/url"
	"strings"
	"unsafe"

	"github.com/stampede-dev/stampede/internal/redact"
)

// hideArgSecrets overwrites, in place, the secrets a user typed on the
// command line, so that `ps` and /proc/PID/cmdline show '*' in their place
// from the moment it runs (as mysql does with -pPASSWORD): the values of
// Authorization, Cookie, Proxy-Authorization and --secret-header NAME
// headers given with --header or -H, every --otlp-header value, and the
// user info of --url and --otlp-endpoint. The
// process's command line is the memory os.Args' strings point into (the
// runtime does not copy argv), so the caller must parse a copy
// (cloneArgs) and call this only on os.Args, never on strings in
// read-only memory. Until it runs (the first moments of the process) the
// secrets are visible; docs/drill.md "Secrets" says so.
func hideArgSecrets(args []string) {
	var extra []string
	flagValues(args, []string{"secret-header"}, func(v string, _ int) { extra = append(extra, v) })
	flagValues(args, []string{"header", "H"}, func(v string, _ int) {
		name, value, ok := strings.Cut(v, ":")
		if ok && redact.IsSecretHeader(strings.TrimSpace(name), extra) {
			blank(value)
		}
	})
	flagValues(args, []string{"otlp-header"}, func(v string, _ int) {
		if _, value, ok := strings.Cut(v, "="); ok {
			blank(value) // every OTLP header is secret
		}
	})
	flagValues(args, []string{"url", "otlp-endpoint"}, func(v string, _ int) {
		if u, err := url.Parse(v); err == nil && u.User != nil {
			if at := strings.LastIndex(v, "@"); at >= 0 {
				if i := strings.Index(v, "://"); i >= 0 && i+3 < at {
					blank(v[i+3 : at])
				}
			}
		}
	})
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
