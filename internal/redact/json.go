package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A Policy says what is secret in a text beyond what every text hides
// (DefaultHeaders, Words, URL user info).
type Policy struct {
	// Headers are more header (and query parameter) names whose values
	// are secret, e.g. the user's --secret-header names.
	Headers []string
	// Values are secret strings to hide wherever they appear (Values of
	// the run's headers and URLs).
	Values []string
}

// String hides the secrets of one string as it would be written: a URL's
// user info and secret query parameters (URLWith), a "Name: value"
// header line of a secret header (HeaderLine), then every one of
// p.Values (Scrub).
func (p Policy) String(s string) string {
	if strings.Contains(s, "@") || strings.Contains(s, "?") {
		s = URLWith(s, p.Headers)
	}
	s = HeaderLine(s, p.Headers)
	return Scrub(s, p.Values)
}

// JSON returns the JSON text b with its secrets hidden, keys and their
// order kept, compact: every string is hidden as by String, and every
// string under an object key that names a secret (IsSecretHeader: an
// "Authorization" header, a "password" field; not a key naming headers or
// a file, see secretKey) is Mark. Numbers, booleans and key names are
// never changed.
func (p Policy) JSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out bytes.Buffer
	if err := p.value(dec, &out, false); err != nil {
		return nil, fmt.Errorf("redact: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("redact: trailing data after the JSON value")
	}
	return out.Bytes(), nil
}

// value copies one JSON value from dec to out; secret is true under a key
// that names a secret.
func (p Policy) value(dec *json.Decoder, out *bytes.Buffer, secret bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				if i > 0 {
					out.WriteByte(',')
				}
				writeString(out, key)
				out.WriteByte(':')
				if err := p.value(dec, out, secret || secretKey(key, p.Headers)); err != nil {
					return err
				}
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := p.value(dec, out, secret); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		if secret && t != "" {
			t = Mark
		}
		writeString(out, p.String(t))
	case json.Number:
		out.WriteString(t.String())
	case bool:
		fmt.Fprint(out, t)
	case nil:
		out.WriteString("null")
	}
	return nil
}

// secretKey reports whether the values under a JSON object's key are
// secret: a secret header's name (IsSecretHeader), unless the key names
// a list of headers ("header", "secret_headers": their entries are
// judged by their own names) or a file ("token_file": a path).
func secretKey(key string, extra []string) bool {
	k := strings.ToLower(key)
	if strings.Contains(k, "header") || strings.HasSuffix(k, "file") {
		return false
	}
	return IsSecretHeader(key, extra)
}

// writeString writes s as a JSON string without HTML escaping, so a mark
// reads <redacted>.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	out.Truncate(out.Len() - 1) // Encode's newline
}

// BodyValues returns the secret strings of a request body as Body hides
// them (the strings under a secret key of a JSON text, at any depth; the
// values of a form's secret fields), for a caller that must cut them out
// of a text that may quote them.
func BodyValues(s string, extra []string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= MinScrub && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			jsonSecrets(v, false, extra, add)
		}
		return out
	}
	for _, p := range strings.Split(s, "&") {
		k, v, ok := strings.Cut(p, "=")
		if ok && secretName(k, extra) {
			add(v)
		}
	}
	return out
}

// jsonSecrets calls add with every string of v under a secret key.
func jsonSecrets(v any, secret bool, extra []string, add func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			jsonSecrets(x, secret || secretKey(k, extra), extra, add)
		}
	case []any:
		for _, x := range v {
			jsonSecrets(x, secret, extra, add)
		}
	case string:
		if secret {
			add(v)
		}
	}
}
