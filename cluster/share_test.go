package cluster

import (
	"fmt"
	"testing"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// TestShareByCapacity: shares follow declared capacities, an undeclared
// one counts as the mean of the declared, every client is placed once,
// and a fleet over the declared total is refused.
func TestShareByCapacity(t *testing.T) {
	for _, c := range []struct {
		clients int
		caps    []int
		want    []int
	}{
		{120, []int{0, 0, 0}, []int{40, 40, 40}},
		{100, []int{300, 100}, []int{75, 25}},
		{90, []int{40, 0, 20}, []int{40, 30, 20}},
		{30, []int{20, 10}, []int{20, 10}},
		{10, []int{1, 1, 1}, nil},
	} {
		got, err := ShareByCapacity(c.clients, c.caps)
		if c.want == nil {
			if err == nil {
				t.Errorf("%d clients over capacities %v: %v, want refused", c.clients, c.caps, got)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%d clients over capacities %v: %v (%v), want %v", c.clients, c.caps, got, err, c.want)
		}
	}
	shares := SplitCounts(loadgen.Config{Client: spec.Client{Clients: 100, Ramp: 1000, MaxInflight: 100}, FirstID: 7}, []int{75, 25})
	if len(shares) != 2 || shares[0].FirstID != 7 || shares[1].FirstID != 82 || shares[0].Ramp != 750 || shares[1].MaxInflight != 25 {
		t.Errorf("SplitCounts: %+v", shares)
	}
}
