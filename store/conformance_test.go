package store_test

import (
	"testing"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// TestConformance runs the conformance suite (package storetest) on the
// embedded store; redisstore and pgstore run it on theirs.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		dir := t.TempDir()
		return func(t *testing.T, opt store.Options) store.Store {
			s, err := store.OpenFile(dir, opt)
			if err != nil {
				t.Fatalf("OpenFile: %v", err)
			}
			return s
		}
	})
}
