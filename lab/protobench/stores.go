package main

// -store may name Redis or PostgreSQL; this program is also its own target
// process (targetEnv), so it links the networked store backends, which
// register their URL schemes with package store when imported.
import (
	_ "github.com/stampede-dev/stampede/store/pgstore"
	_ "github.com/stampede-dev/stampede/store/redisstore"
)
