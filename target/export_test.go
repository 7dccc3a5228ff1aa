package target

// Helpers of the target's tests, for the tests of package target_test.
var (
	StartTestGroup = startGroup
	MustDial       = mustDial
	Eventually     = eventually
	CheckHinted    = checkHinted
	ReadAll        = readAll
)

// CloseSeen is a close frame a client read, and when (closeSeen).
type CloseSeen = closeSeen

// ReadErr is why no close frame was read, if none was.
func (c closeSeen) ReadErr() error { return c.err }
