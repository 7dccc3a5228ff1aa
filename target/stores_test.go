package target

// The protocol tests run the target on Redis and PostgreSQL URLs too
// (storeURLs); package target opens stores by URL but links only the
// embedded one, so its tests import the networked backends, as
// cmd/stampede does.
import (
	_ "github.com/stampede-dev/stampede/store/jsstore"
	_ "github.com/stampede-dev/stampede/store/pgstore"
	_ "github.com/stampede-dev/stampede/store/redisstore"
)
