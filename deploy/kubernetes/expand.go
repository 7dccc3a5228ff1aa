package kubernetes

import "strings"

// Expand replaces each $(VAR) in s by lookup(VAR) the way the kubelet
// expands a container's env values, command and args: $$ is a literal $
// (so $$(VAR) is the text $(VAR)), a reference lookup does not know is
// left as it is, and a $ that starts no reference, or an unclosed $(, is
// kept. Nothing is expanded twice: a value that itself holds $(X) stays so.
func Expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$': // an escaped operator
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // unclosed: kept as written
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default: // a $ that starts nothing
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}
