package results

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// FlowStep is the width of one Flow step: transitions are counted per
// millisecond of the run's time axis.
const FlowStep = time.Millisecond

// FlowCount is the fleet's transitions in one FlowStep.
type FlowCount struct {
	// Step is the step's index: [Step, Step+1) ms from the run's start.
	Step int64 `json:"ms"`
	// Ups counts clients that came up (connected, and resumed where the
	// protocol resumes) after being down or never up.
	Ups uint32 `json:"ups,omitempty"`
	// Downs counts clients that were up and went down.
	Downs uint32 `json:"downs,omitempty"`
	// Firsts counts clients that came up for the first time.
	Firsts uint32 `json:"firsts,omitempty"`
}

// Flow is the fleet's transitions counted per millisecond, in step order,
// empty steps left out: what outage detection (DetectFlow) and the
// first-connect rate need. It merges exactly across processes (each
// process counts its own clients' transitions) and grows with the run's
// length, not with its clients, so a coordinator can hold the fleet's.
type Flow []FlowCount

// FlowOf counts the transitions of a set of clients (any order). Only
// real changes count: an Up of a client already up, or a Down of one
// already down, is not a transition of the fleet. A slice already in
// time order (SortByTime) is read as is; any other is sorted in a copy.
func FlowOf(trs []Transition) Flow {
	sorted := trs
	if !slices.IsSortedFunc(trs, byTime) {
		sorted = slices.Clone(trs)
		SortByTime(sorted)
	}
	// Twice over: the first pass counts the steps, so that the flow is
	// made at its size (a worker makes it once its run ends, when a
	// doubling array's garbage would set its peak).
	var f Flow
	for pass := range 2 {
		n, last := 0, int64(-1)
		st := newClientStates(trs)
		for _, tr := range sorted {
			s := st.get(tr.Client)
			var ups, downs, firsts uint32
			switch {
			case tr.Up && *s&stateUp == 0:
				ups = 1
				if *s&stateSeen == 0 {
					firsts = 1
				}
				*s = stateUp | stateSeen
			case !tr.Up && *s&stateUp != 0:
				*s &^= stateUp
				downs = 1
			default:
				continue // not a change
			}
			step := int64(max(tr.At, 0) / FlowStep)
			if step != last {
				n, last = n+1, step
				if pass == 1 {
					f = append(f, FlowCount{Step: step})
				}
			}
			if pass == 1 {
				c := &f[len(f)-1]
				c.Ups += ups
				c.Downs += downs
				c.Firsts += firsts
			}
		}
		if pass == 0 {
			f = make(Flow, 0, n)
		}
	}
	return f
}

func byTime(a, b Transition) int { return cmp.Compare(a.At, b.At) }

func byClient(a, b Transition) int {
	return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.At, b.At))
}

// SortByTime sorts trs in place by time, stably (transitions at one
// instant keep their order): FlowOf then reads it without a copy.
func SortByTime(trs []Transition) { slices.SortStableFunc(trs, byTime) }

// SortByClient sorts trs in place by client, then time, stably:
// RecoveryPartials then reads it without a copy. A loadgen process sorts
// its clients' transitions in place rather than have each of these
// computations copy them at the end of a run.
func SortByClient(trs []Transition) { slices.SortStableFunc(trs, byClient) }

// Client states of FlowOf.
const (
	stateUp   = 1 << iota // up now
	stateSeen             // was ever up
)

// clientStates holds a state byte per client: in an array indexed from
// the lowest client ID when the IDs are dense enough (a process's
// clients are a range of IDs), else in a map.
type clientStates struct {
	lo    uint32
	dense []uint8
	m     map[uint32]*uint8
}

func newClientStates(trs []Transition) clientStates {
	if len(trs) == 0 {
		return clientStates{}
	}
	lo, hi := trs[0].Client, trs[0].Client
	for _, tr := range trs {
		lo, hi = min(lo, tr.Client), max(hi, tr.Client)
	}
	if span := uint64(hi-lo) + 1; span <= 4*uint64(len(trs))+4096 {
		return clientStates{lo: lo, dense: make([]uint8, span)}
	}
	return clientStates{m: map[uint32]*uint8{}}
}

func (c *clientStates) get(id uint32) *uint8 {
	if c.m == nil {
		return &c.dense[id-c.lo]
	}
	s := c.m[id]
	if s == nil {
		s = new(uint8)
		c.m[id] = s
	}
	return s
}

// Merge returns the sum of f and o, step by step.
func (f Flow) Merge(o Flow) Flow {
	out := make(Flow, 0, max(len(f), len(o)))
	i, j := 0, 0
	for i < len(f) || j < len(o) {
		switch {
		case j == len(o) || (i < len(f) && f[i].Step < o[j].Step):
			out = append(out, f[i])
			i++
		case i == len(f) || o[j].Step < f[i].Step:
			out = append(out, o[j])
			j++
		default:
			c := f[i]
			c.Ups += o[j].Ups
			c.Downs += o[j].Downs
			c.Firsts += o[j].Firsts
			out = append(out, c)
			i, j = i+1, j+1
		}
	}
	return out
}

// FirstConnects returns how many clients came up at least once and the
// end of the step in which the last of them first did: the fleet's
// first-connect rate is n / last.
func (f Flow) FirstConnects() (n int, last time.Duration) {
	for _, c := range f {
		if c.Firsts > 0 {
			n += int(c.Firsts)
			last = time.Duration(c.Step+1) * FlowStep
		}
	}
	return n, last
}

// maxFlowStep bounds a flow step's index (a day of milliseconds), so a
// corrupt piece cannot make an assembler allocate without bound.
const maxFlowStep = 24 * 3600 * 1000

// flowSteps accumulates flows step by step in place, one cell per
// millisecond of the run: an assembler merging many pieces allocates
// nothing per piece, and holds 12 bytes per millisecond of the run.
type flowSteps []flowCell

type flowCell struct{ ups, downs, firsts uint32 }

// add sums f into s.
func (s *flowSteps) add(f Flow) error {
	for _, c := range f {
		if c.Step < 0 || c.Step > maxFlowStep {
			return fmt.Errorf("results: flow step %d out of range", c.Step)
		}
		if n := int(c.Step) + 1; n > len(*s) {
			if n > cap(*s) {
				grown := make(flowSteps, len(*s), max(n, 2*cap(*s)))
				copy(grown, *s)
				*s = grown
			}
			*s = (*s)[:n]
		}
		cell := &(*s)[c.Step]
		cell.ups += c.Ups
		cell.downs += c.Downs
		cell.firsts += c.Firsts
	}
	return nil
}

// Flow returns what s holds as a Flow (empty steps left out).
func (s flowSteps) Flow() Flow {
	var f Flow
	for i, c := range s {
		if c != (flowCell{}) {
			f = append(f, FlowCount{Step: int64(i), Ups: c.ups, Downs: c.downs, Firsts: c.firsts})
		}
	}
	return f
}
