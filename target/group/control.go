package group

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/target"
)

// controller is what the control API drives: one target.Server, or every process
// of a Group.
type controller interface {
	Stall(ctx context.Context, d time.Duration) error
	SetBacklog(ctx context.Context, n int) error
	SetAcceptRate(ctx context.Context, r float64) error
	Reject(ctx context.Context, status int, retryAfter, d time.Duration) error
	ShutdownWith(ctx context.Context, o target.ShutdownOptions) error
	Stats(ctx context.Context) (target.Stats, error)
}

// serverControl adapts a target.Server to controller. Shutdown runs in the
// background, so the HTTP answer goes out before the server is gone.
type serverControl struct{ s *target.Server }

func (c serverControl) Stall(_ context.Context, d time.Duration) error { return c.s.Stall(d) }
func (c serverControl) SetBacklog(_ context.Context, n int) error      { return c.s.SetBacklog(n) }
func (c serverControl) SetAcceptRate(_ context.Context, r float64) error {
	return c.s.SetAcceptRate(r)
}
func (c serverControl) Reject(_ context.Context, status int, ra, d time.Duration) error {
	return c.s.Reject(status, ra, d)
}
func (c serverControl) ShutdownWith(_ context.Context, o target.ShutdownOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	go c.s.ShutdownWith(o)
	return nil
}
func (c serverControl) Stats(context.Context) (target.Stats, error) { return c.s.Stats(), nil }

// ControlHandler returns the HTTP control API of s, which a chaos
// supervisor drives:
//
//	GET  /stats                                   target.Stats as JSON
//	POST /stall?for=3s                            Stall
//	POST /backlog?n=16                            SetBacklog
//	POST /accept-rate?r=500                       SetAcceptRate
//	POST /reject?status=503&retry_after=2s&for=3s Reject
//	POST /shutdown?mode=graceful|abrupt           Shutdown, in the background
//	     [&spread=5s][&hint_after=2s&hint=4s]     (ShutdownWith, graceful only)
//
// /shutdown's optional spread= sends the close frames spread evenly over
// it (in a random order) before the process exits; hint= closes each
// client with 1013 and "retry after D" in the reason, D drawn uniformly
// from [hint_after, hint_after+hint) (hint_after defaults to 0).
//
// A POST answers 204 when applied (202 for /shutdown), 400 with one line of
// text for a bad parameter, 409 once the server is shutting down. Run
// serves it behind controlapi.Guard: a token, the Host header and no
// cross-origin requests (docs/cli.md, "Control API").
func ControlHandler(s *target.Server) http.Handler { return controlMux(serverControl{s}) }

func controlMux(c controller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := c.Stats(r.Context())
		if err != nil {
			controlError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
	post := func(path string, apply func(ctx context.Context, q *query) error) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			q := query{v: r.URL.Query()}
			err := apply(r.Context(), &q)
			switch {
			case q.err != nil:
				http.Error(w, q.err.Error(), http.StatusBadRequest)
			case err != nil:
				controlError(w, err)
			case path == "/shutdown":
				w.WriteHeader(http.StatusAccepted)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		})
	}
	post("/stall", func(ctx context.Context, q *query) error {
		d := q.duration("for")
		return q.then(func() error { return c.Stall(ctx, d) })
	})
	post("/backlog", func(ctx context.Context, q *query) error {
		n := q.int("n")
		return q.then(func() error { return c.SetBacklog(ctx, n) })
	})
	post("/accept-rate", func(ctx context.Context, q *query) error {
		rate := q.float("r")
		return q.then(func() error { return c.SetAcceptRate(ctx, rate) })
	})
	post("/reject", func(ctx context.Context, q *query) error {
		status, ra, d := q.int("status"), q.duration("retry_after"), q.duration("for")
		return q.then(func() error { return c.Reject(ctx, status, ra, d) })
	})
	post("/shutdown", func(ctx context.Context, q *query) error {
		var o target.ShutdownOptions
		var err error
		o.Mode, err = target.ParseShutdownMode(q.v.Get("mode"))
		if err != nil {
			q.fail("mode", "graceful or abrupt")
		}
		o.Spread, o.HintAfter, o.Hint = q.optDuration("spread"), q.optDuration("hint_after"), q.optDuration("hint")
		return q.then(func() error { return c.ShutdownWith(ctx, o) })
	})
	return mux
}

// controlError writes err with the status that says whose fault it is.
func controlError(w http.ResponseWriter, err error) {
	var ce *spec.FieldError
	var re *remoteError
	switch {
	case errors.As(err, &ce):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, target.ErrServerClosed):
		http.Error(w, err.Error(), http.StatusConflict)
	case errors.As(err, &re):
		http.Error(w, err.Error(), re.status)
	default:
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
}

// query reads typed parameters and keeps the first error.
type query struct {
	v   url.Values
	err error // the first *paramError
}

// paramError is a missing or malformed control parameter.
type paramError struct{ name, value, want string }

func (e *paramError) Error() string {
	return fmt.Sprintf("parameter %s=%q: want %s", e.name, e.value, e.want)
}

func (q *query) fail(name, want string) {
	if q.err == nil {
		q.err = &paramError{name, q.v.Get(name), want}
	}
}

func (q *query) duration(name string) time.Duration {
	d, err := time.ParseDuration(q.v.Get(name))
	if err != nil {
		q.fail(name, "a duration such as 3s")
	}
	return d
}

// optDuration is an optional non-negative duration: 0 when absent.
func (q *query) optDuration(name string) time.Duration {
	if !q.v.Has(name) {
		return 0
	}
	d, err := time.ParseDuration(q.v.Get(name))
	if err != nil || d < 0 {
		q.fail(name, "a non-negative duration such as 3s")
	}
	return d
}

func (q *query) int(name string) int {
	n, err := strconv.Atoi(q.v.Get(name))
	if err != nil {
		q.fail(name, "an integer")
	}
	return n
}

func (q *query) float(name string) float64 {
	f, err := strconv.ParseFloat(q.v.Get(name), 64)
	if err != nil {
		q.fail(name, "a number")
	}
	return f
}

// then runs f if every parameter parsed.
func (q *query) then(f func() error) error {
	if q.err != nil {
		return nil
	}
	return f()
}

// remoteError is an error answer from a process's control API.
type remoteError struct {
	status int
	msg    string
}

func (e *remoteError) Error() string { return e.msg }

// callControl makes one control request to the API at base
// ("http://127.0.0.1:PORT") with its token and decodes a JSON answer into
// out if non-nil.
func callControl(ctx context.Context, base, token, method, path string, params url.Values, out any) error {
	u := base + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	controlapi.SetToken(req, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return &remoteError{status: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s", method, u, strings.TrimSpace(string(b)))}
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
