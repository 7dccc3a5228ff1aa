package main

// The networked store backends register their URL schemes (redis://,
// postgres://, nats:// and the embedded jetstream:///dir) with package
// store when imported. `stampede target` and
// `stampede agent` (which runs a storm's target processes) open whatever
// --store names, so this binary links them. The lean loadgen agent,
// cmd/stampede-worker, never opens a store and does not import them,
// which keeps the Redis and PostgreSQL drivers out of every loadgen
// process's memory.
import (
	_ "github.com/stampede-dev/stampede/store/jsstore"
	_ "github.com/stampede-dev/stampede/store/pgstore"
	_ "github.com/stampede-dev/stampede/store/redisstore"
)
