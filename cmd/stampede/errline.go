package main

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// maxEchoed is how much of a value given by the user an error message
// quotes: a chaos schedule of 22 MB is not printed back whole.
const maxEchoed = 200

// maxErrorLine caps the line main prints for an error.
const maxErrorLine = 4096

// printedSecrets are the secret values of the running command, taken
// from its command line and its --config file: an error line is printed
// without them, whatever a library quoted.
var printedSecrets struct {
	mu     sync.Mutex
	values []string
}

// addSecrets adds values to printedSecrets.
func addSecrets(values ...string) {
	printedSecrets.mu.Lock()
	defer printedSecrets.mu.Unlock()
	for _, v := range values {
		if len(v) >= redact.MinScrub && !slices.Contains(printedSecrets.values, v) {
			printedSecrets.values = append(printedSecrets.values, v)
		}
	}
}

// resetSecrets forgets the values of an earlier run of the app (tests
// run many in one process).
func resetSecrets() {
	printedSecrets.mu.Lock()
	defer printedSecrets.mu.Unlock()
	printedSecrets.values = nil
}

// secretPolicy is what an error line hides: the URLs' secrets and every
// one of printedSecrets, the longest first so that a value holding
// another is cut out whole.
func secretPolicy() redact.Policy {
	printedSecrets.mu.Lock()
	defer printedSecrets.mu.Unlock()
	v := slices.Clone(printedSecrets.values)
	slices.SortFunc(v, func(a, b string) int { return len(b) - len(a) })
	return redact.Policy{Values: v}
}

// argSecrets adds the secret values of a command line (its flags, as
// --name V or --name=V, and every URL in it) to printedSecrets: the
// values of secret headers, the user info and secret query values of
// URLs, the secret fields of --data, the OTLP headers' values, the
// secret words of --restart-cmd and the password of a key=value store
// string.
func argSecrets(args []string) {
	var extra []string
	eachFlag(args, func(name, v string) {
		if name == "secret-header" {
			extra = append(extra, v)
		}
	})
	eachFlag(args, func(name, v string) { addSecrets(flagSecrets(name, v, extra)...) })
	for _, a := range args {
		if strings.Contains(a, "://") {
			addSecrets(redact.Values(nil, extra, urlsIn(a)...)...)
		}
	}
}

// flagSecrets are the secret values of one flag's value.
func flagSecrets(name, v string, extra []string) []string {
	switch name {
	case "header", "H":
		k, value, _ := strings.Cut(v, ":")
		if redact.IsSecretHeader(strings.TrimSpace(k), extra) || strings.ContainsAny(v, "\r\n") {
			value = strings.TrimSpace(value)
			out := []string{value}
			if _, cred, ok := strings.Cut(value, " "); ok {
				out = append(out, strings.TrimSpace(cred))
			}
			return append(out, strings.FieldsFunc(value, func(r rune) bool { return r == '\r' || r == '\n' })...)
		}
	case "otlp-header":
		if _, value, ok := strings.Cut(v, "="); ok {
			return []string{value}
		}
	case "restart-cmd":
		return redact.CommandValues(v, extra)
	case "data", "body":
		return redact.BodyValues(v, extra)
	case "store":
		return redact.CommandValues(v, extra) // host=h password=P
	}
	return nil
}

// urlsIn returns the URLs in a (a flag=URL argument holds one after '=').
func urlsIn(a string) []string {
	if _, after, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		a = after
	}
	return []string{a}
}

// eachFlag calls fn with the name (without dashes) and value of every
// flag of args given as --name V or --name=V; a flag followed by another
// flag takes no value.
func eachFlag(args []string, fn func(name, value string)) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			value, ok = args[i], true
		}
		if ok {
			fn(name, value)
		}
	}
}

// fieldInText is a field's path leading an error's text or a part of it
// after ": ", as a *spec.FieldError writes it: "Hub.TokenFile: ".
var fieldInText = regexp.MustCompile(`(^|: )([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+): `)

// namedFields is err's text with every field error in it named by its
// flag (flagError), where it was wrapped too ("sending plan:
// Client.MsgSize: ..."), and any field path left in the text as it would
// be by a library that quoted another's error as text.
func namedFields(err error) string {
	msg := err.Error()
	var fe *spec.FieldError
	if errors.As(err, &fe) {
		if r := flagError(fe).Error(); r != fe.Error() {
			msg = strings.Replace(msg, fe.Error(), r, 1)
		}
	}
	return fieldInText.ReplaceAllStringFunc(msg, func(m string) string {
		sub := fieldInText.FindStringSubmatch(m)
		if name := fieldFlag(sub[2]); name != "" {
			return sub[1] + name + ": "
		}
		return m
	})
}

// quoted is a quoted string in an error's text.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// errorLine is the one line main prints for err: every field error named
// by its flag (flagError, wherever it was wrapped), the library's
// prefix after the flag dropped (oneVoice), the URLs' secrets and the
// run's secret values cut out, and a long quoted input cut short.
func errorLine(err error) string {
	msg := oneVoice(namedFields(err))
	msg = secretPolicy().Text(msg)
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) <= maxEchoed+2 {
			return q
		}
		return redact.Truncate(q[:len(q)-1], maxEchoed) + `"`
	})
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, "\r", `\r`), "\n", " ")
	return redact.Truncate(msg, maxErrorLine)
}

// echoValue is a flag's value as an error quotes it: a header's value
// hidden when its name is secret or it holds a control character (a
// CR LF may carry another header), a body's secret fields, a deploy
// command's secret words and a URL's secrets hidden, and cut to
// maxEchoed bytes.
func echoValue(flag, v string) string {
	switch flag {
	case "header", "H":
		name, _, _ := strings.Cut(v, ":")
		if redact.IsSecretHeader(strings.TrimSpace(name), nil) || strings.ContainsFunc(v, isCTL) {
			v = strings.TrimSpace(name) + ": " + redact.Mark
		}
	case "otlp-header":
		name, _, _ := strings.Cut(v, "=")
		v = name + "=" + redact.Mark
	case "data", "body":
		v = redact.Body(v, nil)
	case "restart-cmd", "store":
		v = redact.Command(v, nil)
	default:
		v = redact.Policy{}.Text(v)
	}
	return redact.Truncate(secretPolicy().Text(v), maxEchoed)
}
