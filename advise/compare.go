package advise

import (
	"context"
	"math"
	"slices"

	"github.com/stampede-dev/stampede/mitigation"
	"github.com/stampede-dev/stampede/results/summary"
)

// MeasuredMitigation is one run of a bench of mitigations: the mitigation
// it applied and its summary (nil when the run failed).
type MeasuredMitigation struct {
	Mitigation string
	Summary    *summary.Summary
}

// MitigationFigures are one mitigation's figures, measured or predicted;
// nil where a figure was never reached.
type MitigationFigures struct {
	Mitigation string   `json:"mitigation"`
	R99S       *float64 `json:"r99_s"`
	Wasted     *float64 `json:"wasted_attempts_per_client"`
	Peak       *float64 `json:"herd_peak_per_100ms"`
}

// MitigationComparison sets a bench of mitigations beside the
// simulator's prediction of it, row by row, and says whether both order
// the mitigations alike (by wasted attempts, then R99: Order).
type MitigationComparison struct {
	Measured       []MitigationFigures `json:"measured"`
	Predicted      []MitigationFigures `json:"predicted"`
	MeasuredOrder  []string            `json:"measured_order"`
	PredictedOrder []string            `json:"predicted_order"`
	SameOrder      bool                `json:"same_order"`
	// Simulations is how many simulations the prediction took.
	Simulations int `json:"-"`
}

// CompareMitigations predicts each of ms with the simulator (Mitigations,
// cfg.Sim the bench's fleet, server and schedule with its one policy) and
// sets the prediction beside the measured runs, which are ms's in order
// (fewer when the bench was stopped early).
func CompareMitigations(ctx context.Context, cfg Config, ms []mitigation.Mitigation, measured []MeasuredMitigation) (*MitigationComparison, error) {
	pred, n, err := Mitigations(ctx, cfg, ms)
	if err != nil {
		return nil, err
	}
	c := &MitigationComparison{Simulations: n}
	for i, r := range measured {
		f := MitigationFigures{Mitigation: r.Mitigation}
		if r.Summary != nil {
			if rec, ok := r.Summary.WorstRecovery(); ok {
				f.R99S, f.Wasted = rec.R99S, rec.WastedAttemptsPerClient
				if rec.HerdPeakPer100ms != nil {
					v := float64(*rec.HerdPeakPer100ms)
					f.Peak = &v
				}
			}
		}
		c.Measured = append(c.Measured, f)
		p := pred[i]
		c.Predicted = append(c.Predicted, MitigationFigures{Mitigation: p.Mitigation.String(),
			R99S: finite(p.R99), Wasted: finite(p.Wasted), Peak: finite(p.Peak)})
	}
	c.MeasuredOrder, c.PredictedOrder = figuresOrder(c.Measured), figuresOrder(c.Predicted)
	c.SameOrder = slices.Equal(c.MeasuredOrder, c.PredictedOrder)
	return c, nil
}

// figuresOrder is Order of a table's rows; a figure never reached counts
// as the worst.
func figuresOrder(fs []MitigationFigures) []string {
	names := make([]string, len(fs))
	wasted, r99 := make([]float64, len(fs)), make([]float64, len(fs))
	orInf := func(p *float64) float64 {
		if p == nil {
			return math.Inf(1)
		}
		return *p
	}
	for i, f := range fs {
		names[i], wasted[i], r99[i] = f.Mitigation, orInf(f.Wasted), orInf(f.R99S)
	}
	return Order(names, wasted, r99)
}

// finite is v, or nil when it is not a number.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
