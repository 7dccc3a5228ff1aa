package archtest

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"regexp"
	"testing"
)

// flagName is a command-line flag as a user types it: --url, --procs.
var flagName = regexp.MustCompile(`--[a-z]`)

// commandDirs are the trees that may name flags: the command itself, the
// user's scripts and the lab, which drive it by its command line.
var commandDirs = []string{"cmd", "scripts", "lab"}

// TestLibrariesNameNoFlag: no string in the non-test Go code of a library
// names a command-line flag. Only cmd/stampede knows the flags (its knob
// table maps fields to them); a library speaks of fields ("Server.Procs")
// or in plain words, so its messages stay true whichever command, flag
// spelling or config file set the value.
func TestLibrariesNameNoFlag(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	eachGoFile(t, fset, root, commandDirs, func(_ string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && flagName.MatchString(lit.Value) {
				t.Errorf("%s: %s names a flag; name the field or say it in words", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	})
}
