package backoff_test

import (
	"fmt"
	"os"

	"github.com/stampede-dev/stampede/backoff"
)

// A spec parses into a Policy; String gives its canonical form back.
func ExampleParse() {
	p, err := backoff.Parse("exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p)
	fmt.Println(p.Kind, p.Max, p.Jitter, p.SpreadMin, p.SpreadMax)

	_, err = backoff.Parse("exp:initial=1x")
	fmt.Println(err)
	// Output:
	// exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms
	// exp 1m0s 0.5 100ms 500ms
	// policy "exp:initial=1x": initial: time: unknown unit "x" in duration "1x"
}

// docs/policy.md's worked example: exponential from 1 s, doubling, capped at 60 s.
func ExamplePolicy_Delays() {
	p := backoff.MustParse("exp:initial=1s,multiplier=2,max=60s")
	fmt.Println(p.Delays(1, 0, 9))
	// Output:
	// [1s 2s 4s 8s 16s 32s 1m0s 1m0s 1m0s]
}

// Each attempt's delay is a pure function of (seed, client, attempt).
func ExamplePolicy_Delay() {
	p := backoff.MustParse("fixed:initial=1s,jitter=0.5")
	fmt.Println(p.Delay(1, 0, 1), p.Delay(1, 0, 1), p.Delay(1, 1, 1))
	// Output:
	// 1.249389122s 1.249389122s 1.482585764s
}

// A fleet that all retries after exactly 1 s arrives in one 100 ms window
// out of eleven: peak-to-mean 11.
func ExampleFirstRetrySpread() {
	s := backoff.FirstRetrySpread(backoff.MustParse("fixed:initial=1s"), 1, 1000)
	fmt.Println(len(s.Windows), s.Peak, s.PeakToMean)
	_ = s.WriteText(os.Stdout)
	// Output:
	// 11 1000 11
	// first retries of 1000 clients, policy fixed:initial=1s, seed 1
	//    start  count
	// 0s-900ms      0  (10 empty windows folded)
	//       1s   1000  ############################################################
	// first 1s, last 1s
	// peak 1000 per 100ms, mean 90.9 per 100ms over 11 windows, peak-to-mean 11.00
}
