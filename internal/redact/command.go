package redact

import (
	"slices"
	"strings"
)

// CommandWords are the parts of a word of a shell command that make the
// word after it secret (Command), beside Words: "--token T", "bearer T",
// "passcode: T".
var CommandWords = []string{"passcode", "bearer"}

// Command returns a shell command (a drill's --restart-cmd) as it may be
// recorded: split into words as sh would, with the secrets hidden as
// argv hides a command line's: the value of a NAME=VALUE or NAME: VALUE
// word whose name is secret, the word after a word that names a secret
// (--token T, key T, Authorization: Bearer T), a URL's user info and
// secret query parameters; the words joined by single spaces and quoted
// where they hold one. A command that cannot be split into words
// (unbalanced quotes, a heredoc) is Mark whole: nothing of it is known
// to be safe. extra are more secret names (--secret-header).
func Command(cmd string, extra []string) string {
	words, ok := shellWords(cmd)
	if !ok {
		return Mark
	}
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellQuote(w)
	}
	for _, s := range commandSecrets(words, extra) {
		out[s.index] = shellQuote(s.shown)
	}
	return strings.Join(out, " ")
}

// CommandValues returns the secret strings of a shell command, those
// Command hides, to scrub wherever they appear (the command's own
// output: `curl -v` echoes its headers). A command that cannot be split
// is read word by word on spaces, quotes dropped, so its values are still
// found. Strings shorter than MinScrub are left out, as Values does.
func CommandValues(cmd string, extra []string) []string {
	words, ok := shellWords(cmd)
	if !ok {
		words = strings.Fields(strings.NewReplacer(`"`, " ", `'`, " ", "<<", " ").Replace(cmd))
	}
	var out []string
	for _, s := range commandSecrets(words, extra) {
		for _, v := range s.values {
			v = strings.TrimSpace(v)
			if len(v) >= MinScrub && v != Mark && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// commandSecret is a word of a command that holds a secret: its index,
// how it is shown and the secret strings in it.
type commandSecret struct {
	index  int
	shown  string
	values []string
}

// commandSecrets finds the words of a command that hold a secret.
func commandSecrets(words, extra []string) []commandSecret {
	var out []commandSecret
	secretWord := func(w string) bool {
		w = strings.TrimLeft(w, "-")
		return secretName(w, extra) || matchAny(w, CommandWords)
	}
	after := false // the word before named a secret
	for i, w := range words {
		switch {
		case strings.ContainsAny(w, " \t\n"): // a quoted phrase: its own words
			inner := strings.Fields(w)
			var values []string
			found := commandSecrets(inner, extra)
			for _, s := range found {
				inner[s.index] = s.shown
				values = append(values, s.values...)
			}
			if len(found) > 0 {
				out = append(out, commandSecret{i, strings.Join(inner, " "), values})
			}
			after = false
			continue
		case after:
			v := strings.TrimRight(w, ";&|)") // an operator that ends the word is sh's
			s := commandSecret{index: i, shown: Mark + w[len(v):]}
			// "Bearer" before its token, "X-Token:" before its value: the
			// word after is secret too. Any other word is the value,
			// though it may hold a secret word ("MYTOKEN123").
			if after = authScheme(v) || strings.HasSuffix(v, ":"); !after {
				s.values = append([]string{v}, credOf(v)...)
			}
			out = append(out, s)
			continue
		case strings.Contains(w, "://"):
			if u := (Policy{Headers: extra}).Text(w); u != w {
				out = append(out, commandSecret{i, u, Values(nil, extra, urlInText.FindAllString(w, -1)...)})
			}
		default:
			if name, value, ok := cutAssign(w); ok && (secretWord(name) || IsSecretHeader(name, extra)) {
				if strings.TrimSpace(value) == "" { // "Authorization:" then its value
					after = true
					continue
				}
				sep := w[len(name) : len(w)-len(strings.TrimLeft(value, " \t"))]
				out = append(out, commandSecret{i, name + sep + Mark, append([]string{value}, credOf(value)...)})
				after = false
				continue
			}
		}
		after = secretWord(w) && !strings.ContainsAny(w, "/.") // a path names no secret
	}
	return out
}

// authScheme reports whether w is the scheme of an Authorization value,
// which the credential follows.
func authScheme(w string) bool {
	for _, s := range []string{"Bearer", "Basic", "Token", "Digest", "Negotiate"} {
		if strings.EqualFold(w, s) {
			return true
		}
	}
	return false
}

// credOf is the credential of "Scheme CRED" (Bearer T gives T).
func credOf(v string) []string {
	if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
		return []string{strings.TrimSpace(cred)}
	}
	return nil
}

// cutAssign splits a NAME=VALUE or NAME: VALUE word; the name holds no
// space nor path.
func cutAssign(w string) (name, value string, ok bool) {
	i := strings.IndexAny(w, "=:")
	if i <= 0 || strings.ContainsAny(w[:i], " \t/") {
		return "", "", false
	}
	return w[:i], w[i+1:], true
}

// matchAny reports whether w holds one of words, without regard to
// case.
func matchAny(w string, words []string) bool {
	l := strings.ToLower(w)
	return slices.ContainsFunc(words, func(s string) bool { return strings.Contains(l, s) })
}

// shellWords splits a command into words as sh does for quoting: blanks
// separate words; single quotes keep everything; double quotes keep all
// but a backslash before " \ $ `; a backslash outside quotes keeps the
// next character. Operators (; | &) stay inside the words they touch.
// ok is false for unbalanced quotes, a trailing backslash or a heredoc
// (<<), whose body is not words.
func shellWords(cmd string) (words []string, ok bool) {
	if strings.Contains(cmd, "<<") {
		return nil, false
	}
	var w strings.Builder
	in := false // a word is under way
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			w.WriteString(cmd[i+1 : i+1+end])
			i, in = i+1+end, true
		case c == '"':
			j := i + 1
			for ; j < len(cmd) && cmd[j] != '"'; j++ {
				if cmd[j] == '\\' && j+1 < len(cmd) && strings.IndexByte("\"\\$`", cmd[j+1]) >= 0 {
					j++
				}
				w.WriteByte(cmd[j])
			}
			if j >= len(cmd) {
				return nil, false
			}
			i, in = j, true
		case c == '\\':
			if i+1 >= len(cmd) {
				return nil, false
			}
			i++
			if cmd[i] != '\n' {
				w.WriteByte(cmd[i])
			}
			in = true
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words, true
}

// shellQuote writes a word so that it reads as one: as it is, or in
// single quotes when it is empty or holds a blank or a quote. Operators
// (; | &) are kept as typed: the text is read, not run.
func shellQuote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
