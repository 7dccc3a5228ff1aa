package realservers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes what the tests built (mochi's program) once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if mochiExe != "" {
		_ = os.RemoveAll(filepath.Dir(mochiExe))
	}
	os.Exit(code)
}
