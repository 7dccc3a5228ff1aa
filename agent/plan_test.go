package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/chaos/supervisor"
	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/target"
)

// fill sets every settable field of v to a non-zero value derived from
// seed, recursing into structs, and records function and interface fields
// (which JSON cannot carry) under their path in funcs.
func fill(t *testing.T, v reflect.Value, path string, seed *int, funcs map[string]bool) {
	*seed++
	n := *seed
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 0, 0, n, 0, time.UTC)))
			return
		}
		if v.Type() == reflect.TypeOf(netip.Addr{}) {
			v.Set(reflect.ValueOf(netip.AddrFrom4([4]byte{127, 0, byte(n >> 8), byte(n)})))
			return
		}
		if v.Type() == reflect.TypeOf(backoff.Policy{}) {
			v.Set(reflect.ValueOf(backoff.MustParse("exp:initial=1s,max=30s,jitter=0.5,spread=100ms-500ms,attempts=9")))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fill(t, v.Field(i), path+"."+f.Name, seed, funcs)
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	case reflect.String:
		v.SetString(path)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			// A JSON value the config carries as it is (a session's
			// payloads): valid JSON, distinct per field.
			v.SetBytes([]byte(fmt.Sprintf(`{"n":%d}`, n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(t, s.Index(i), path, seed, funcs)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path, seed, funcs)
		fill(t, e, path, seed, funcs)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		if v.Type() == reflect.TypeOf((*slog.Logger)(nil)) {
			funcs[path] = true // a live object of the process that sets it
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path, seed, funcs)
		v.Set(p)
	case reflect.Func, reflect.Interface, reflect.Chan:
		funcs[path] = true
	default:
		t.Fatalf("%s: cannot fill a %s", path, v.Kind())
	}
}

// TestPlanRoundTripsEveryField: every field of every role's configuration
// crosses the wire intact, so nothing is dropped on the way to an agent
// (as flags once dropped every field without a flag). Function and
// interface fields are hooks of the process that sets them; the test
// lists them, so a new one is a decision, not an accident.
func TestPlanRoundTripsEveryField(t *testing.T) {
	wantHooks := map[string]bool{}
	for _, tc := range []struct {
		role Role
		plan func(*Plan) any
	}{
		{RoleLoadgen, func(p *Plan) any { p.Loadgen = &loadgen.Config{}; return p.Loadgen }},
		{RoleTarget, func(p *Plan) any { p.Target = &TargetPlan{}; return p.Target }},
		{RoleProxy, func(p *Plan) any { p.Proxy = &ProxyPlan{}; return p.Proxy }},
		{RoleServer, func(p *Plan) any { p.Server = &target.Config{}; return p.Server }},
		{RoleRelay, func(p *Plan) any { p.Relay = &proxy.Config{}; return p.Relay }},
	} {
		p := &Plan{RunID: "run", Role: tc.role, Name: "agent"}
		cfg := tc.plan(p)
		seed := 0
		funcs := map[string]bool{}
		fill(t, reflect.ValueOf(cfg).Elem(), string(tc.role), &seed, funcs)
		for f := range funcs {
			wantHooks[f] = true
			// Hooks are zeroed: they are not part of a plan.
			zeroPath(reflect.ValueOf(cfg).Elem(), f[len(tc.role):])
		}
		var buf bytes.Buffer
		s := NewStream(&buf, &buf, nil)
		if err := s.Send(Message{V: Version, Kind: KindPlan, Plan: p}); err != nil {
			t.Fatalf("%s: %v", tc.role, err)
		}
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("%s: %v", tc.role, err)
		}
		if !reflect.DeepEqual(m.Plan, p) {
			t.Errorf("%s plan changed on the wire:\n sent %+v\n got  %+v", tc.role, p, m.Plan)
			diffFields(t, string(tc.role), reflect.ValueOf(p).Elem(), reflect.ValueOf(m.Plan).Elem())
		}
	}
	for h := range wantHooks {
		if !knownHooks[h] {
			t.Errorf("%s is a function or interface field: it cannot travel in a plan; list it in knownHooks if a child may run without it", h)
		}
	}
}

// knownHooks are the hook fields a child runs without (its defaults):
// functions and live objects of the process that sets them, for tests and
// embedding programs.
var knownHooks = map[string]bool{
	"loadgen.OnRetry":       true, // a test's view of each retry
	"target.Config.Handler": true, // an embedding program's own handler
	"target.Config.Clock":   true, // a test's clock
	"target.Config.Logger":  true, // where this process logs
	"server.Handler":        true,
	"server.Clock":          true,
	"server.Logger":         true,
}

// zeroPath zeroes the field at a dotted path below v.
func zeroPath(v reflect.Value, path string) {
	for _, name := range splitPath(path) {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return
		}
		v = v.FieldByName(name)
	}
	v.Set(reflect.Zero(v.Type()))
}

func splitPath(p string) []string {
	var out []string
	for _, s := range bytes.Split([]byte(p), []byte(".")) {
		if len(s) > 0 {
			out = append(out, string(s))
		}
	}
	return out
}

// diffFields names the fields that differ, for a readable failure.
func diffFields(t *testing.T, path string, a, b reflect.Value) {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return
	}
	for a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil() {
		a, b = a.Elem(), b.Elem()
	}
	if a.Kind() != reflect.Struct || a.Type() == reflect.TypeOf(time.Time{}) {
		t.Errorf("  %s: sent %v, got %v", path, a.Interface(), b.Interface())
		return
	}
	for i := 0; i < a.NumField(); i++ {
		if a.Type().Field(i).IsExported() {
			diffFields(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	}
}

// TestShiftTimes: every instant a message carries moves by the offset,
// and the caller's copies do not.
func TestShiftTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rs := &supervisor.Restarted{Listening: t0, Ready: t0, Steps: []supervisor.Step{{Stop: t0, Listening: t0, Ready: t0}}}
	msgs := []Message{
		{Kind: KindStart, Start: &Start{At: t0}},
		{Kind: KindProgress, Progress: &Progress{At: t0, Started: t0}},
		{Kind: KindEvent, Event: &Event{At: t0}},
		{Kind: KindReply, Reply: &Reply{Restarted: rs}},
	}
	for i := range msgs {
		ShiftTimes(&msgs[i], time.Second)
	}
	want := t0.Add(time.Second)
	if !msgs[0].Start.At.Equal(want) || !msgs[1].Progress.At.Equal(want) || !msgs[1].Progress.Started.Equal(want) ||
		!msgs[2].Event.At.Equal(want) || !msgs[3].Reply.Restarted.Ready.Equal(want) || !msgs[3].Reply.Restarted.Steps[0].Stop.Equal(want) {
		t.Errorf("shifted: %+v %+v %+v %+v", msgs[0].Start, msgs[1].Progress, msgs[2].Event, msgs[3].Reply.Restarted)
	}
	if !rs.Ready.Equal(t0) || !rs.Steps[0].Stop.Equal(t0) {
		t.Error("ShiftTimes changed the caller's restart record")
	}
}
