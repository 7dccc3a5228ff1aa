package group

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/target"
)

// callLog is a controller that records the call a control request made.
type callLog struct {
	calls []string
	args  []any
}

func (c *callLog) note(name string, args ...any) error {
	c.calls = append(c.calls, name)
	c.args = args
	return nil
}
func (c *callLog) Stall(_ context.Context, d time.Duration) error { return c.note("stall", d) }
func (c *callLog) SetBacklog(_ context.Context, n int) error      { return c.note("backlog", n) }
func (c *callLog) SetAcceptRate(_ context.Context, r float64) error {
	return c.note("accept-rate", r)
}
func (c *callLog) Reject(_ context.Context, status int, ra, d time.Duration) error {
	return c.note("reject", status, ra, d)
}
func (c *callLog) ShutdownWith(_ context.Context, o target.ShutdownOptions) error {
	return c.note("shutdown", o)
}
func (c *callLog) Stats(context.Context) (target.Stats, error) { return target.Stats{}, nil }

// FuzzControlQuery: no query string makes the control API panic; a
// request either is refused with 400 and reaches nothing, or makes exactly
// the call its parameters say, with the values they parse to.
func FuzzControlQuery(f *testing.F) {
	paths := []string{"/stall", "/backlog", "/accept-rate", "/reject", "/shutdown"}
	for _, s := range []struct {
		path  uint8
		query string
	}{
		{0, "for=3s"}, {0, "for=-1s"}, {0, "for=99999999999h"}, {0, "for=3s&for=x"},
		{1, "n=16"}, {1, "n=99999999999999999999"}, {1, "n=0x10"},
		{2, "r=500"}, {2, "r=NaN"}, {2, "r=-Inf"}, {2, "r=1e-400"}, {2, "r=%zz"},
		{3, "status=503&retry_after=2s&for=5s"}, {3, "status=503&retry_after=2s"},
		{4, "mode=graceful"}, {4, "mode=ABRUPT"}, {4, "mode="}, {4, ";mode=abrupt"},
		{4, "mode=graceful&spread=5s&hint_after=2s&hint=4s"}, {4, "mode=graceful&hint=-1s"}, {4, "mode=graceful&spread=x"},
	} {
		f.Add(s.path, s.query)
	}
	f.Fuzz(func(t *testing.T, p uint8, raw string) {
		path := paths[int(p)%len(paths)]
		var c callLog
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
		req.URL.Path, req.URL.RawQuery = path, raw
		w := httptest.NewRecorder()
		controlMux(&c).ServeHTTP(w, req)
		switch w.Code {
		case http.StatusBadRequest:
			if len(c.calls) != 0 {
				t.Fatalf("%s?%s: 400 after calling %v", path, raw, c.calls)
			}
			return
		case http.StatusNoContent, http.StatusAccepted:
		default:
			t.Fatalf("%s?%s: status %d", path, raw, w.Code)
		}
		if len(c.calls) != 1 || "/"+c.calls[0] != path {
			t.Fatalf("%s?%s: calls %v", path, raw, c.calls)
		}
		v, _ := url.ParseQuery(raw)
		dur := func(name string) time.Duration {
			d, err := time.ParseDuration(v.Get(name))
			if err != nil {
				t.Fatalf("%s?%s: %s=%q taken, but it is not a duration", path, raw, name, v.Get(name))
			}
			return d
		}
		num := func(name string) int {
			n, err := strconv.Atoi(v.Get(name))
			if err != nil {
				t.Fatalf("%s?%s: %s=%q taken, but it is not an integer", path, raw, name, v.Get(name))
			}
			return n
		}
		var want []any
		switch path {
		case "/stall":
			want = []any{dur("for")}
		case "/backlog":
			want = []any{num("n")}
		case "/accept-rate":
			r, err := strconv.ParseFloat(v.Get("r"), 64)
			if err != nil {
				t.Fatalf("%s?%s: r taken, but it is not a number", path, raw)
			}
			if r != r { // NaN: compare as NaN
				if g := c.args[0].(float64); g == g {
					t.Fatalf("%s?%s: rate %v, want NaN", path, raw, g)
				}
				return
			}
			want = []any{r}
		case "/reject":
			want = []any{num("status"), dur("retry_after"), dur("for")}
		case "/shutdown":
			m, err := target.ParseShutdownMode(v.Get("mode"))
			if err != nil {
				t.Fatalf("%s?%s: mode taken, but %v", path, raw, err)
			}
			opt := func(name string) time.Duration {
				if !v.Has(name) {
					return 0
				}
				return dur(name)
			}
			want = []any{target.ShutdownOptions{Mode: m, Spread: opt("spread"), HintAfter: opt("hint_after"), Hint: opt("hint")}}
		}
		if len(want) != len(c.args) {
			t.Fatalf("%s?%s: args %v, want %v", path, raw, c.args, want)
		}
		for i := range want {
			if want[i] != c.args[i] {
				t.Fatalf("%s?%s: args %v, want %v", path, raw, c.args, want)
			}
		}
	})
}
