package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/report"
)

// Feed publishes a frame of snap() every Config.Every until Finish or
// Close, in a goroutine of its own under the live label; a feed already
// running is replaced (a bench's next run).
func (s *Server) Feed(snap func() Snapshot) {
	s.stopFeed()
	ctx, stop := context.WithCancel(context.Background())
	s.mu.Lock()
	s.feed = stop
	s.mu.Unlock()
	s.feedWG.Add(1)
	go pprof.Do(ctx, Label, func(ctx context.Context) {
		defer s.feedWG.Done()
		t := time.NewTicker(s.cfg.Every)
		defer t.Stop()
		for {
			s.Publish(snap())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// stopFeed stops the feed, if one runs, and waits for it.
func (s *Server) stopFeed() {
	s.mu.Lock()
	stop := s.feed
	s.feed = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.feedWG.Wait()
}

// Publish sends a frame of snap to every page open; a frame that cannot
// be built is skipped (the next one may).
func (s *Server) Publish(snap Snapshot) {
	f, run, err := build(snap)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.seq++
	f.Seq = s.seq
	s.run = run
	s.mu.Unlock()
	if b, err := event(f); err == nil {
		s.publish(b, false)
	}
}

// Finish stops the feed and sends the last frame: the figures and data of
// the results folder dir (a run's, or a bench's), whose report.html the
// page then becomes. It waits up to wait for every open page to take it
// and fetch report.html, so that a page on a slow machine still becomes
// it before the caller closes the server. With dir "" (a run that writes
// no folder) the page keeps its last frame.
func (s *Server) Finish(dir string, wait time.Duration) error {
	s.stopFeed()
	if dir == "" {
		return nil
	}
	runs, err := report.LoadDirs([]string{dir})
	if err != nil {
		return fmt.Errorf("live page: %w", err)
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.run = runs[len(runs)-1]
	s.finalRe = filepath.Join(dir, report.File)
	s.mu.Unlock()
	f, err := final(runs, seq)
	if err != nil {
		return fmt.Errorf("live page: %w", err)
	}
	b, err := event(f)
	if err != nil {
		return fmt.Errorf("live page: %w", err)
	}
	s.publish(b, true)
	deadline := time.Now().Add(wait)
	for (s.Subscribers() > 0 || s.reportServed.Load() < s.finalSent.Load()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// event is f as one server-sent event: JSON holds no newline.
func event(f Frame) ([]byte, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + 32)
	b.WriteString("event: frame\nid: ")
	b.WriteString(strconv.FormatUint(f.Seq, 10))
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes(), nil
}
