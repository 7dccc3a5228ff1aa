package fault

// The reset fault (Set.Reset) resets every connection, established and
// new, while it lasts: clients see ECONNRESET. It ends all traffic, so it
// is never combined with another fault (checkExclusive).

// checkExclusive rejects a reset or blackhole combined with another fault:
// each ends all traffic, so the other could never show.
func checkExclusive(f Set) error {
	others := f
	others.Reset, others.Blackhole = false, false
	switch {
	case f.Reset && (f.Blackhole || others != Set{}):
		return &FieldError{"Reset", "ends all traffic: cannot be combined with other faults"}
	case f.Blackhole && others != Set{}:
		return &FieldError{"Blackhole", "ends all traffic: cannot be combined with other faults"}
	}
	return nil
}
