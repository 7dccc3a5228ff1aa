package target

import "github.com/stampede-dev/stampede/internal/wstest"

// readFrame reads one frame with a bounded payload (wstest.ReadFrame).
var readFrame = wstest.ReadFrame
