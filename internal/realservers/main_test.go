package realservers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes what the tests built (mochi's and centrifuge's programs) once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, exe := range []string{mochiExe, cfgExe} {
		if exe != "" {
			_ = os.RemoveAll(filepath.Dir(exe))
		}
	}
	os.Exit(code)
}
