package storm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"

	// storm.Run checks and cleans the target's store from this process.
	_ "github.com/stampede-dev/stampede/store/pgstore"
	_ "github.com/stampede-dev/stampede/store/redisstore"
)

// runKeys counts the keys of run id on the test Redis.
func runKeys(t *testing.T, id string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	keys, err := c.Keys(context.Background(), "stampede:"+id+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// TestStoreCleanedUp: a stampede-mode run on redis:// without prefix=
// stores its messages under stampede:RUNID: and leaves no key behind;
// with keep=1 they stay.
func TestStoreCleanedUp(t *testing.T) {
	requireService(t, "Redis", "127.0.0.1:6379")
	for _, keep := range []bool{false, true} {
		cfg := stormConfig(t, "")
		cfg.Fleet.Clients = 20
		cfg.Fleet.Mode = spec.ModeStampede
		cfg.Fleet.Rooms = 2
		cfg.Fleet.MsgRate = 2
		cfg.Duration = 3 * time.Second
		cfg.Target.Store = "redis://127.0.0.1:6379/0"
		if keep {
			cfg.Target.Store += "?keep=1"
		}
		res := runStorm(t, cfg)
		id := res.Summary.RunID
		if keep {
			t.Cleanup(func() {
				c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
				defer c.Close()
				keys, _ := c.Keys(context.Background(), "stampede:"+id+":*").Result()
				if len(keys) > 0 {
					c.Unlink(context.Background(), keys...)
				}
			})
		}
		if m := res.Summary.Messages; m.Acked == 0 {
			t.Fatalf("keep=%v: no message ACKed: the run stored nothing", keep)
		}
		n := runKeys(t, id)
		t.Logf("keep=%v: %d keys under stampede:%s: after the run", keep, n, id)
		if !keep && n != 0 {
			t.Errorf("%d keys of run %s left in Redis", n, id)
		}
		if keep && n == 0 {
			t.Errorf("keep=1: no key of run %s left in Redis", id)
		}
	}
}

// TestStoreChecked: a store that refuses is a one-line error on the
// Store field before any role is placed, its password hidden.
func TestStoreChecked(t *testing.T) {
	requireService(t, "Redis", "127.0.0.1:6379")
	for _, u := range []string{
		"mongodb://u:hunter2@127.0.0.1:1/x",
		"redis://:hunter2@127.0.0.1:1/0",
		"redis://:hunter2@127.0.0.1:6379/0",
	} {
		cfg := stormConfig(t, "")
		cfg.Fleet.Mode = spec.ModeStampede
		cfg.Target.Store = u
		var log lockedBuffer
		cfg.Log = &log
		_, err := storm.Run(context.Background(), cfg)
		var fe *spec.FieldError
		if !errors.As(err, &fe) || fe.Field != "Server.Store" {
			t.Fatalf("Run with store %s: %v; want a FieldError on Server.Store", u, err)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %q: want one line without the password", err)
		}
		if strings.Contains(log.String(), "target:") {
			t.Errorf("the target was placed before the store was checked:\n%s", log.String())
		}
		t.Logf("%s: %v", u, err)
	}
}
