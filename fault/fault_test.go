package fault

import (
	"errors"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestSetString(t *testing.T) {
	tests := []struct {
		name string
		in   Set
		want string
	}{
		{"none", Set{}, ""},
		// Canonical order, whatever the order the fields were set in.
		{"all but the exclusive ones", Set{Loss: 0.015, Bandwidth: 12_500, Jitter: 20 * ms, Latency: 200 * ms},
			" latency=200ms jitter=20ms bandwidth=12.5KB/s loss=1.5%"},
		{"reset", Set{Reset: true}, " reset"},
		{"blackhole", Set{Blackhole: true}, " blackhole"},
		// Six decimals of a percent survive the trip through a float.
		{"smallest loss", Set{Loss: 0.00000001}, " loss=0.000001%"},
		{"whole loss", Set{Loss: 1}, " loss=100%"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.name, got, tt.want)
		}
		if got, want := tt.in.Words(), tt.want; len(want) > 0 && got != want[1:] || len(want) == 0 && got != "" {
			t.Errorf("%s: Words() = %q, want %q without its leading space", tt.name, got, tt.want)
		}
	}
}

func TestFormatBandwidth(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{1, "1B/s"},
		{1000, "1KB/s"},
		{1024, "1KiB/s"},                       // binary when no decimal unit divides it
		{1536, "1.536KB/s"},                    // else decimals of the largest decimal unit
		{1_048_577, "1.048577MB/s"},            // neither divides
		{999_999_999_999, "999.999999999GB/s"}, // every digit kept
	}
	for _, tt := range tests {
		if got := FormatBandwidth(tt.in); got != tt.want {
			t.Errorf("FormatBandwidth(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSetValidate(t *testing.T) {
	tests := []struct {
		name  string
		in    Set
		field string // "": valid
	}{
		{"none", Set{}, ""},
		{"latency with jitter", Set{Latency: 100 * ms, Jitter: 100 * ms}, ""},
		{"every combinable fault", Set{Latency: 1 * ms, Bandwidth: 1, Loss: 1}, ""},
		{"negative latency", Set{Latency: -1}, "Latency"},
		{"jitter alone", Set{Jitter: ms}, "Jitter"},
		{"jitter above latency", Set{Latency: ms, Jitter: 2 * ms}, "Jitter"},
		{"negative bandwidth", Set{Bandwidth: -1}, "Bandwidth"},
		{"bandwidth too high", Set{Bandwidth: MaxBandwidth + 1}, "Bandwidth"},
		{"loss above 1", Set{Loss: 1.01}, "Loss"},
		{"negative loss", Set{Loss: -0.1}, "Loss"},
		{"reset with latency", Set{Reset: true, Latency: ms}, "Reset"},
		{"reset with blackhole", Set{Reset: true, Blackhole: true}, "Reset"},
		{"blackhole with loss", Set{Blackhole: true, Loss: 0.5}, "Blackhole"},
	}
	for _, tt := range tests {
		err := tt.in.Validate()
		var fe *FieldError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tt.name, err)
		case tt.field != "" && !errors.As(err, &fe):
			t.Errorf("%s: Validate() = %v, want a *FieldError on %s", tt.name, err, tt.field)
		case tt.field != "" && fe.Field != tt.field:
			t.Errorf("%s: Validate() names %s (%v), want %s", tt.name, fe.Field, err, tt.field)
		}
	}
}
