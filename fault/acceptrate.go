package fault

// The accept-rate event caps how many connections a second the target
// accepts, which makes a capacity-limited server: above the rate its
// backlog fills. These are its bounds, shared by the schedule language
// (which refuses a rate outside them where it is written) and the target
// (which paces within them).

// The accept rates a server paces, besides 0 (unlimited). Below
// MinAcceptRate one accept waits over a quarter of an hour, nothing a run
// measures; rates are refused outside the range rather than wrapped into
// a wait that overflows or a burst that does not fit an int.
const (
	MinAcceptRate = 1e-3
	MaxAcceptRate = 1e9
)
