package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stampede-dev/stampede/connerr"
)

// This file reads docs/summary-json.md as a machine would: the field tables
// of its sections, with their type and "in" columns (which kinds of run
// write a field), into one flat map from a field's path to what the page
// says of it; and checks a summary.json against that map, both ways. The
// page's section "Which run writes which field" explains the columns to a
// person.

// runKinds are the kinds of run that write a summary.json.
var runKinds = []string{"run", "bench", "loadgen", "drill", "http", "simulate"}

// presence is whether a kind's summary.json has a documented field.
type presence int

const (
	never    presence = iota
	optional          // only when it applies
	always
)

// shape is what a documented field holds.
type shape int

const (
	leafShape     shape = iota // a JSON scalar of docField.leaf type
	objectShape                // an object described by a section
	arrayShape                 // an array whose elements are docField.elem
	mapShape                   // an object with free keys whose values are docField.elem
	classMapShape              // every connect-error class to an integer
	opaqueShape                // an object described in words
)

// docField is one field path as docs/summary-json.md gives it.
type docField struct {
	path     string
	in       map[string]presence
	shape    shape
	leaf     string // integer, number, string, boolean (leafShape, or the elements of an array or map of leaves)
	nullable bool
	children []string // object: the documented keys
	elem     *docField
}

// docRow is one row of a field table.
type docRow struct {
	names []string
	typ   string
	in    map[string]presence // nil: the table has no "in" column
	line  int
}

// summaryDoc is the parsed page: every path, and the root's keys.
type summaryDoc struct {
	fields map[string]*docField // by path: "events[].failures", "stopped.*.count"
	root   *docField
}

const summaryDocPath = "../../docs/summary-json.md"

var (
	headingRE  = regexp.MustCompile(`^#{2,4} (.+)$`)
	backtickRE = regexp.MustCompile("`([^`]+)`")
	anchorRE   = regexp.MustCompile(`\]\(#([a-z0-9_-]+)\)`)
)

// slug is GitHub's anchor of a heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// splitRow splits a markdown table row into its cells (a `\|` stays in
// its cell).
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// parseIn reads an "in" cell: kinds, `all`, `all but K...`, each with an
// optional `?`; a later entry overrides an earlier one.
func parseIn(cell string) (map[string]presence, error) {
	in := map[string]presence{}
	for _, item := range strings.Split(cell, ",") {
		item = strings.TrimSpace(item)
		p := always
		if strings.HasSuffix(item, "?") {
			p, item = optional, strings.TrimSuffix(item, "?")
		}
		var kinds []string
		switch {
		case item == "all":
			kinds = runKinds
		case strings.HasPrefix(item, "all but "):
			but := strings.Fields(strings.TrimPrefix(item, "all but "))
			for _, k := range but {
				if !slices.Contains(runKinds, k) {
					return nil, fmt.Errorf("unknown kind %q in %q", k, cell)
				}
			}
			for _, k := range runKinds {
				if !slices.Contains(but, k) {
					kinds = append(kinds, k)
				}
			}
		case slices.Contains(runKinds, item):
			kinds = []string{item}
		default:
			return nil, fmt.Errorf("unknown kind %q in %q (kinds: all, all but K, %s; a ? after one)", item, cell, strings.Join(runKinds, ", "))
		}
		for _, k := range kinds {
			in[k] = p
		}
	}
	return in, nil
}

// readDocTables reads the field tables of the page by section anchor.
func readDocTables(path string) (map[string][]docRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tables := map[string][]docRow{}
	var section string
	var cols map[string]int // the current field table's columns; nil outside one
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section, cols = slug(m[1]), nil
			continue
		}
		if !strings.HasPrefix(line, "|") {
			cols = nil
			continue
		}
		cells := splitRow(line)
		switch {
		case cols == nil && cells[0] == "field":
			cols = map[string]int{}
			for i, c := range cells {
				cols[c] = i
			}
			if _, ok := cols["type"]; !ok {
				return nil, fmt.Errorf("line %d: a field table without a type column", n)
			}
			if _, ok := tables[section]; ok {
				return nil, fmt.Errorf("line %d: a second field table in section #%s", n, section)
			}
			tables[section] = []docRow{}
		case cols == nil || strings.HasPrefix(cells[0], "---"):
		default:
			row, err := readDocRow(cells, cols)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			row.line = n
			tables[section] = append(tables[section], row)
		}
	}
	return tables, sc.Err()
}

func readDocRow(cells []string, cols map[string]int) (docRow, error) {
	if len(cells) < len(cols) {
		return docRow{}, fmt.Errorf("%d cells, the header has %d", len(cells), len(cols))
	}
	var row docRow
	for _, m := range backtickRE.FindAllStringSubmatch(cells[cols["field"]], -1) {
		row.names = append(row.names, m[1])
	}
	if len(row.names) == 0 {
		return row, fmt.Errorf("no `name` in the field cell %q", cells[0])
	}
	row.typ = cells[cols["type"]]
	if i, ok := cols["in"]; ok {
		in, err := parseIn(cells[i])
		if err != nil {
			return row, err
		}
		row.in = in
	}
	return row, nil
}

// parseSummaryDoc reads the page into paths, from its "Top level" table
// down every type that links a section of the page.
func parseSummaryDoc(path string) (*summaryDoc, error) {
	tables, err := readDocTables(path)
	if err != nil {
		return nil, err
	}
	d := &summaryDoc{fields: map[string]*docField{}}
	all := map[string]presence{}
	for _, k := range runKinds {
		all[k] = always
	}
	used := map[string]bool{}
	d.root = &docField{in: all, shape: objectShape}
	if err := d.expand(d.root, "top-level", tables, used, nil); err != nil {
		return nil, err
	}
	for anchor := range tables {
		if !used[anchor] {
			return nil, fmt.Errorf("the field table of #%s is linked from no type column: its fields would go unchecked", anchor)
		}
	}
	return d, nil
}

// expand fills parent's children from the table of section anchor.
func (d *summaryDoc) expand(parent *docField, anchor string, tables map[string][]docRow, used map[string]bool, stack []string) error {
	rows, ok := tables[anchor]
	if !ok {
		return fmt.Errorf("%s: type links #%s, which has no field table", parent.path, anchor)
	}
	if slices.Contains(stack, anchor) {
		return fmt.Errorf("%s: #%s contains itself", parent.path, anchor)
	}
	used[anchor] = true
	for _, row := range rows {
		in := inherit(parent.in, row.in)
		for _, name := range row.names {
			f := &docField{path: joinPath(parent.path, name), in: in}
			if _, dup := d.fields[f.path]; dup {
				return fmt.Errorf("line %d: %s documented twice", row.line, f.path)
			}
			d.fields[f.path] = f
			parent.children = append(parent.children, name)
			if err := d.typeOf(f, row.typ, tables, used, append(stack, anchor)); err != nil {
				return fmt.Errorf("line %d: %s: %w", row.line, f.path, err)
			}
		}
	}
	return nil
}

// typeOf reads a type cell into f's shape, expanding a linked section.
func (d *summaryDoc) typeOf(f *docField, typ string, tables map[string][]docRow, used map[string]bool, stack []string) error {
	f.nullable = strings.Contains(typ, "or null")
	typ = strings.TrimSpace(strings.ReplaceAll(typ, "or null", ""))
	link := ""
	if m := anchorRE.FindStringSubmatch(typ); m != nil {
		link = m[1]
	}
	switch {
	case strings.Contains(typ, "class map"):
		f.shape = classMapShape
	case strings.HasPrefix(typ, "array of "), strings.HasPrefix(typ, "map of "):
		f.shape, f.elem = arrayShape, &docField{path: f.path + "[]", in: f.in}
		if strings.HasPrefix(typ, "map of ") {
			f.shape, f.elem.path = mapShape, f.path+".*"
		}
		d.fields[f.elem.path] = f.elem
		if link != "" {
			f.elem.shape = objectShape
			return d.expand(f.elem, link, tables, used, stack)
		}
		return leafType(f.elem, typ[strings.Index(typ, " of ")+4:])
	case link != "":
		f.shape = objectShape
		return d.expand(f, link, tables, used, stack)
	case typ == "object":
		f.shape = opaqueShape
	default:
		return leafType(f, typ)
	}
	return nil
}

func leafType(f *docField, typ string) error {
	switch typ {
	case "integer", "number", "string", "boolean":
		f.shape, f.leaf = leafShape, typ
		return nil
	}
	return fmt.Errorf("type %q: want integer, number, string, boolean (or null), object, a class map, or a link to a section (array of, map of)", typ)
}

// inherit is a row's presence per kind under its parent's: never where
// either says never, optional where either says optional.
func inherit(parent, row map[string]presence) map[string]presence {
	out := map[string]presence{}
	for _, k := range runKinds {
		p := parent[k]
		if row != nil {
			p = min(p, row[k])
		}
		out[k] = p
	}
	return out
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func kindsOf(in map[string]presence) string {
	var ks []string
	for _, k := range runKinds {
		switch in[k] {
		case always:
			ks = append(ks, k)
		case optional:
			ks = append(ks, k+"?")
		}
	}
	if len(ks) == 0 {
		return "no kind"
	}
	return strings.Join(ks, ", ")
}

// checkSummary holds the summary.json text b, written by a run of kind,
// to the page: every key written is documented for kind, every field
// documented always for kind is written (an array's element fields when
// it has elements, a map's when it has keys), a null only where the type
// allows one, every class in each class map. It returns one line per
// disagreement.
func (d *summaryDoc) checkSummary(kind string, b []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{"summary.json: " + err.Error()}
	}
	var errs []string
	d.walk(kind, d.root, v, &errs)
	errs = append(errs, d.checkOrder(b)...)
	slices.Sort(errs) // once each, not once per array element
	return slices.Compact(errs)
}

// checkOrder: the keys of every documented object are written in the
// order of the page's rows ("keys in the order of the tables below").
func (d *summaryDoc) checkOrder(b []byte) []string {
	orders := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := keyOrders(dec, "", orders); err != nil {
		return []string{"summary.json: " + err.Error()}
	}
	var errs []string
	for path, written := range orders {
		f := d.root
		if path != "" {
			f = d.fields[path]
		}
		if f == nil || f.shape != objectShape {
			continue // a map, or a key reported as undocumented
		}
		var want []string
		for _, k := range f.children {
			if slices.Contains(written, k) {
				want = append(want, k)
			}
		}
		var got []string
		for _, k := range written {
			if slices.Contains(f.children, k) {
				got = append(got, k)
			}
		}
		if !slices.Equal(got, want) {
			errs = append(errs, fmt.Sprintf("%s: keys written in the order %s; the page's order is %s", orDoc(path), strings.Join(got, ", "), strings.Join(want, ", ")))
		}
	}
	return errs
}

func orDoc(path string) string {
	if path == "" {
		return "summary.json"
	}
	return path
}

// keyOrders records, for each object path ("events[]" for the elements
// of an array), the order of its keys where it first appears.
func keyOrders(dec *json.Decoder, path string, out map[string][]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			keys = append(keys, k.(string))
			if err := keyOrders(dec, joinPath(path, k.(string)), out); err != nil {
				return err
			}
		}
		if _, ok := out[path]; !ok {
			out[path] = keys
		}
	case json.Delim('['):
		for dec.More() {
			if err := keyOrders(dec, path+"[]", out); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func (d *summaryDoc) walk(kind string, f *docField, v any, errs *[]string) {
	bad := func(format string, a ...any) { *errs = append(*errs, fmt.Sprintf(format, a...)) }
	name := f.path
	if name == "" {
		name = "summary.json"
	}
	if v == nil {
		if !f.nullable {
			bad("%s: null, but the page does not allow null for it", name)
		}
		return
	}
	switch f.shape {
	case leafShape:
		if !leafIs(f.leaf, v) {
			bad("%s: %v (%T), but the page says %s", name, v, v, f.leaf)
		}
	case classMapShape:
		checkClassMap(name, v, bad)
	case opaqueShape:
		if _, ok := v.(map[string]any); !ok {
			bad("%s: %T, but the page says object", name, v)
		}
	case arrayShape:
		a, ok := v.([]any)
		if !ok {
			bad("%s: %T, but the page says array", name, v)
			return
		}
		for _, e := range a {
			d.walk(kind, f.elem, e, errs)
		}
	case mapShape:
		m, ok := v.(map[string]any)
		if !ok {
			bad("%s: %T, but the page says map", name, v)
			return
		}
		for _, k := range sortedKeys(m) {
			d.walk(kind, f.elem, m[k], errs)
		}
	case objectShape:
		d.walkObject(kind, f, v, bad, errs)
	}
}

func (d *summaryDoc) walkObject(kind string, f *docField, v any, bad func(string, ...any), errs *[]string) {
	m, ok := v.(map[string]any)
	if !ok {
		bad("%s: %T, but the page says object", f.path, v)
		return
	}
	for _, k := range sortedKeys(m) {
		c, ok := d.fields[joinPath(f.path, k)]
		switch {
		case !ok:
			bad("%s: written, but not documented", joinPath(f.path, k))
		case c.in[kind] == never:
			bad("%s: written by %s, but documented only for %s", c.path, kind, kindsOf(c.in))
		default:
			d.walk(kind, c, m[k], errs)
		}
	}
	for _, k := range f.children {
		c := d.fields[joinPath(f.path, k)]
		if _, ok := m[k]; !ok && c.in[kind] == always {
			bad("%s: documented for %s, but absent", c.path, kind)
		}
	}
}

func leafIs(typ string, v any) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		_, err := n.Int64()
		return ok && (err == nil || !strings.ContainsAny(n.String(), ".eE-"))
	}
	return false
}

// checkClassMap: every connect-error class, an integer each, nothing else.
func checkClassMap(name string, v any, bad func(string, ...any)) {
	m, ok := v.(map[string]any)
	if !ok {
		bad("%s: %T, but a class map is an object", name, v)
		return
	}
	var want []string
	for _, c := range connerr.Classes() {
		want = append(want, c.String())
		n, ok := m[c.String()]
		switch {
		case !ok:
			bad("%s: class %s missing", name, c)
		case !leafIs("integer", n):
			bad("%s.%s: %v, want an integer", name, c, n)
		}
	}
	for k := range m {
		if !slices.Contains(want, k) {
			bad("%s: %q is no connect-error class", name, k)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestSummaryDocParses: the page reads as the contract test reads it, and
// the checker it yields fails in the ways it must (a field written and not
// documented, documented and absent, a null the type forbids, a class
// missing from a class map), on a summary made from the page's own paths.
func TestSummaryDocParses(t *testing.T) {
	d, err := parseSummaryDoc(summaryDocPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"run_id", "events[].failures", "recovery[].r99_s", "latency_ms.ttr.p99", "http.attempt_latency_ms.count",
		"resources.target.peak_rss_bytes", "stopped.*.last_error", "agents[].pid", "kernel.ListenOverflows", "messages.tracked"} {
		if d.fields[p] == nil {
			t.Errorf("%s: not read from the page", p)
		}
	}
	if f := d.fields["http"]; f == nil || f.in["http"] != always || f.in["run"] != never {
		t.Errorf("http: read as in %v; want http only", f)
	}
	classes := map[string]any{}
	for _, c := range connerr.Classes() {
		classes[c.String()] = 0
	}
	sum := map[string]any{"run_id": "x", "seed": 1, "connect": map[string]any{"attempts": 1, "failures": classes, "disconnects": nil}}
	b, _ := json.Marshal(sum)
	errs := strings.Join(d.checkSummary("run", b), "\n")
	for _, want := range []string{"connect.disconnects: null", "connect.successes: documented for run, but absent", "clients: documented for run, but absent"} {
		if !strings.Contains(errs, want) {
			t.Errorf("checking a partial summary: no %q in:\n%s", want, errs)
		}
	}
	delete(classes, "dns")
	sum["bogus"], sum["http"] = 1, map[string]any{}
	b, _ = json.Marshal(sum)
	errs = strings.Join(d.checkSummary("run", b), "\n")
	for _, want := range []string{"bogus: written, but not documented", "connect.failures: class dns missing", "http: written by run, but documented only for http"} {
		if !strings.Contains(errs, want) {
			t.Errorf("checking a wrong summary: no %q in:\n%s", want, errs)
		}
	}
}
