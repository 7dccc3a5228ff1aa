package storm_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/spec"
)

// TestModesDuringRun: a stampede-mode run keeps its message store in its
// results folder; the folder and the store's folder are 0700 and the
// store's log 0600 while the run goes on, not only once it has ended.
func TestModesDuringRun(t *testing.T) {
	cfg := stormConfig(t, "")
	cfg.Fleet.Clients = 20
	cfg.Fleet.Mode = spec.ModeStampede
	cfg.Fleet.Rooms = 2
	cfg.Fleet.MsgRate = 2
	cfg.Duration = 3 * time.Second
	cfg.Out = filepath.Join(t.TempDir(), "out")
	want := map[string]os.FileMode{
		cfg.Out:                         0o700,
		filepath.Join(cfg.Out, "store"): 0o700,
		filepath.Join(cfg.Out, "store", "messages.log"): 0o600,
	}
	seen := map[string]os.FileMode{} // the widest mode each had
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for path := range want {
				if fi, err := os.Stat(path); err == nil {
					seen[path] |= fi.Mode().Perm()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	runStorm(t, cfg)
	close(stop)
	wg.Wait()
	for path, mode := range want {
		got, ok := seen[path]
		if !ok {
			t.Errorf("%s never seen during the run", path)
		} else if got != mode {
			t.Errorf("%s was %v during the run, want %v", path, got, mode)
		}
	}
}
