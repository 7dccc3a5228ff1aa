package jsstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/store"
)

// BenchmarkAppend appends from 30 rooms at once through one store.
func BenchmarkAppend(b *testing.B) {
	srv, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	u := srv.URL() + "?sync=1"
	s, err := store.Open(context.Background(), u, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/30 + 1
	for r := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, _, err := s.Append(context.Background(), fmt.Sprint("room", r), fmt.Sprint("id", i), []byte("hello")); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*30)/time.Since(start).Seconds(), "appends/s")
}
