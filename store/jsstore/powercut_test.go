package jsstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// errPowerOff is what a sync returns once the power is cut.
var errPowerOff = errors.New("powercut: the power is off")

// shadowDisk is the store folder as a power cut leaves it. nats-server
// writes its block files itself, so the disk cannot hold back their
// writes; instead it keeps, at each sync the server's owner asks for (the
// syncer's syncFile seam), a copy of the block as it was at that moment,
// and of a folder, the names in it. Image then builds the folder the
// power cut leaves: each block as it was at its last sync, present only
// if a sync of its folder saw it; the stream's metadata as it is; the
// stream state file (index.db) dropped, so recovery reads the blocks.
type shadowDisk struct {
	mu     sync.Mutex
	cut    bool
	cutAt  int // cut at this sync instead of doing it (0: never)
	syncs  int
	blocks map[string][]byte          // block path -> contents at its last sync
	dirs   map[string]map[string]bool // folder -> names its last sync saw
}

func newShadowDisk() *shadowDisk {
	return &shadowDisk{blocks: map[string][]byte{}, dirs: map[string]map[string]bool{}}
}

// syncFile is the syncer's seam.
func (d *shadowDisk) syncFile(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return errPowerOff
	}
	if d.syncs+1 == d.cutAt {
		d.cut = true
		return errPowerOff
	}
	st, err := os.Stat(name)
	if err != nil {
		return err
	}
	if st.IsDir() {
		ents, err := os.ReadDir(name)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for _, e := range ents {
			names[e.Name()] = true
		}
		d.dirs[name] = names
	} else {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		d.blocks[name] = b
	}
	d.syncs++
	return nil
}

// Cut is the power cut: no sync succeeds from now on.
func (d *shadowDisk) Cut() {
	d.mu.Lock()
	d.cut = true
	d.mu.Unlock()
}

// Syncs returns how many syncs succeeded.
func (d *shadowDisk) Syncs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.syncs
}

// Image writes the folder src as the power cut leaves it into a new
// folder and returns it. src's server must be stopped.
func (d *shadowDisk) Image(t *testing.T, src string) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(out, 0o755)
		case strings.HasSuffix(path, ".blk"):
			b, synced := d.blocks[path]
			if !synced || !d.dirs[filepath.Dir(path)][e.Name()] {
				return nil // never durable
			}
			return os.WriteFile(out, b, 0o644)
		case e.Name() == "index.db" || e.Name() == "LOCK":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
