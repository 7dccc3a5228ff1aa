package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// countsText writes counts by name as "200=853 529=5345", names in order:
// what a person reads, not a Go map (map[200:853 529:5345]).
func countsText(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatUint(m[k], 10)
	}
	return strings.Join(parts, " ")
}

// doubledPrefix matches an error that names its flag and then the
// library's package of the same name: "--chaos: chaos: line 1 ...",
// "--chaos-file F: chaos: ...".
var doubledPrefix = regexp.MustCompile(`^(--([a-z]+)[a-z-]*(?: [^:\s]+)?: )([a-z]+): `)

// oneVoice drops the library's package prefix after the flag that already
// says where the error is: "--chaos: line 1 ...", not "--chaos: chaos:
// line 1 ...".
func oneVoice(msg string) string {
	m := doubledPrefix.FindStringSubmatchIndex(msg)
	if m == nil || msg[m[4]:m[5]] != msg[m[6]:m[7]] {
		return msg
	}
	return msg[:m[3]] + msg[m[1]:]
}
