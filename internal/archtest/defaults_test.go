package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// defaulting are the spec package's functions that apply a knob's
// default: the specs' WithDefaults and the helpers they call. A default
// constant is referenced from these and nowhere else.
var defaulting = []string{"WithDefaults", "fleetPingInterval", "RoomOf"}

// TestDefaultsAppliedOnce: every knob's default is one constant of package
// spec (DefaultBacklog, DefaultPingInterval, ...), referenced in the
// non-test code of the module only from the spec's defaulting code, and
// from it at least once. A package that wants a default calls
// WithDefaults; it never restates or re-exports the constant, so a
// default changes in one place.
func TestDefaultsAppliedOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	specDir := filepath.Join(root, "spec")
	fset := token.NewFileSet()
	consts := defaultConsts(t, fset, specDir)
	if len(consts) == 0 {
		t.Fatal("package spec declares no Default constant")
	}
	applied := map[string]bool{}
	eachGoFile(t, fset, root, nil, func(path string, f *ast.File) {
		if filepath.Dir(path) == specDir {
			checkSpecFile(t, fset, f, consts, applied)
		} else {
			checkImporter(t, fset, f, consts)
		}
	})
	for _, c := range consts {
		if !applied[c] {
			t.Errorf("spec.%s is applied by no defaulting function (%s)", c, strings.Join(defaulting, ", "))
		}
	}
}

// defaultConsts are the names of the constants of package spec that begin
// with Default.
func defaultConsts(t *testing.T, fset *token.FileSet, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Default") {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// checkSpecFile fails a default constant used in package spec outside the
// defaulting functions, and marks those it applies.
func checkSpecFile(t *testing.T, fset *token.FileSet, f *ast.File, consts []string, applied map[string]bool) {
	t.Helper()
	for _, decl := range f.Decls {
		fn, isFunc := decl.(*ast.FuncDecl)
		ast.Inspect(decl, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && !isFunc {
				for _, v := range vs.Values { // a constant defined by a default
					ast.Inspect(v, func(n ast.Node) bool {
						if id, ok := n.(*ast.Ident); ok && slices.Contains(consts, id.Name) {
							t.Errorf("%s: %s is defined from a default; reference it only in %s", fset.Position(id.Pos()), id.Name, strings.Join(defaulting, ", "))
						}
						return true
					})
				}
				return false
			}
			id, ok := n.(*ast.Ident)
			if !ok || !slices.Contains(consts, id.Name) || !isFunc {
				return true
			}
			if !slices.Contains(defaulting, fn.Name.Name) {
				t.Errorf("%s: %s in %s: a default is referenced only in %s", fset.Position(id.Pos()), id.Name, fn.Name.Name, strings.Join(defaulting, ", "))
				return true
			}
			applied[id.Name] = true
			return true
		})
	}
}

// checkImporter fails every reference to a default constant of package
// spec from another package.
func checkImporter(t *testing.T, fset *token.FileSet, f *ast.File, consts []string) {
	t.Helper()
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"spec" {
			name = "spec"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && slices.Contains(consts, sel.Sel.Name) {
			t.Errorf("%s: spec.%s: a default is applied by the spec's WithDefaults, not restated (call WithDefaults)", fset.Position(sel.Pos()), sel.Sel.Name)
		}
		return true
	})
}
