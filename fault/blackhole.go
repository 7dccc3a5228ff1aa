package fault

// The blackhole fault (Set.Blackhole) swallows all data in both directions
// and closes nothing while it lasts: clients see no answers and time out on
// their own. Like reset it ends all traffic, so it is never combined with
// another fault (checkExclusive, reset.go).
