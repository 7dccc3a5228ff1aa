package redisstore

import (
	"context"
	"net/url"
	"testing"

	"github.com/stampede-dev/stampede/store"
	"github.com/stampede-dev/stampede/store/storetest"
)

// TestConformance runs the conformance suite (package storetest) on the
// real Redis on 127.0.0.1, opening it by URL through store.Open (which
// this package's init registered the scheme for). It skips when Redis is
// unreachable, unless STAMPEDE_REQUIRE_SERVICES=1.
func TestConformance(t *testing.T) {
	storetest.Run(t, fresh)
}

// fresh opens a Redis store under a new key prefix, whose keys are deleted
// at the end of the test.
func fresh(t *testing.T) storetest.Opener {
	storetest.RequireService(t, "Redis", storetest.RedisAddr)
	prefix := storetest.RandomName(t) + ":"
	t.Cleanup(func() {
		u, _ := url.Parse(storetest.RedisURL)
		s, err := Open(context.Background(), u, store.Options{})
		if err != nil {
			return
		}
		defer s.Close()
		ctx := context.Background()
		iter := s.c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s.c.Del(ctx, iter.Val())
		}
	})
	return func(t *testing.T, opt store.Options) store.Store {
		s, err := store.Open(storetest.Context(t), storetest.RedisURL+"?prefix="+url.QueryEscape(prefix), opt)
		if err != nil {
			t.Fatalf("Open redis: %v", err)
		}
		return s
	}
}
