package storm

import (
	"errors"
	"testing"

	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// A run's accept rate and admission floor are the whole target's: each
// of its processes gets its share, and a share too small to pace is
// refused naming the field.
func TestShareRates(t *testing.T) {
	c := target.Config{Server: spec.Server{AcceptRate: 400, AdmitRamp: 1, AdmitFloor: 40}}
	if err := shareRates(&c, 4); err != nil || c.AcceptRate != 100 || c.AdmitFloor != 10 {
		t.Fatalf("shared: rate %v floor %v, %v; want 100 and 10", c.AcceptRate, c.AdmitFloor, err)
	}
	c = target.Config{Server: spec.Server{AcceptRate: 400}}
	if err := shareRates(&c, 4); err != nil || c.AdmitFloor != 0 {
		t.Fatalf("no floor: %v, %v; want the default left to each process", c.AdmitFloor, err)
	}
	c = target.Config{Server: spec.Server{AcceptRate: 400, AdmitRamp: 1, AdmitFloor: 0.002}}
	var fe *spec.FieldError
	if err := shareRates(&c, 4); !errors.As(err, &fe) || fe.Field != "Server.AdmitFloor" {
		t.Fatalf("a floor too small to share: %v; want a Server.AdmitFloor error", err)
	}
}
