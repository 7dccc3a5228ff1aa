package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/stampede-dev/stampede/fault"
)

// Controller is what the control API drives: a Group, or one
// Proxy (LocalController).
type Controller interface {
	// Apply switches the fault set f on (the zero set: all off).
	Apply(ctx context.Context, f fault.Set) error
	// Stats returns the counters, summed over processes.
	Stats(ctx context.Context) (Stats, error)
}

// LocalController adapts a Proxy in this process to Controller.
func LocalController(p *Proxy) Controller { return localControl{p} }

type localControl struct{ p *Proxy }

func (c localControl) Apply(_ context.Context, f fault.Set) error {
	c.p.Set(f)
	return nil
}

func (c localControl) Stats(context.Context) (Stats, error) { return c.p.Stats(), nil }

// ControlHandler returns the HTTP control API of a fault proxy (a
// Proxy or a Group). parse reads a fault set written in schedule words,
// e.g. "latency=200ms loss=1%" (chaos.ParseProxyFault):
//
//	GET    /stats                               Stats as JSON
//	GET    /fault                               the active faults, in schedule words
//	POST   /fault?latency=200ms&jitter=20ms     switch faults on (replacing the set)
//	POST   /fault?bandwidth=1MB/s | ?loss=1% | ?reset | ?blackhole
//	POST   /fault?set=latency%3D200ms+loss%3D1%25   the same, as one string of words
//	DELETE /fault                               every fault off (so is a POST with none)
//
// A POST or DELETE answers 204 when applied, 400 with one line of text for
// a fault set that does not parse. Run serves it behind
// controlapi.Guard (docs/cli.md, "Control API").
func ControlHandler(c Controller, parse func(words string) (fault.Set, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := c.Stats(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
	mux.HandleFunc("GET /fault", func(w http.ResponseWriter, r *http.Request) {
		st, err := c.Stats(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		words := st.Fault
		if words == "" {
			words = "off"
		}
		fmt.Fprintln(w, words)
	})
	apply := func(w http.ResponseWriter, r *http.Request, f fault.Set) {
		if err := c.Apply(r.Context(), f); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		f, err := parse(faultQuery(r))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		apply(w, r, f)
	})
	mux.HandleFunc("DELETE /fault", func(w http.ResponseWriter, r *http.Request) { apply(w, r, fault.Set{}) })
	return mux
}

// faultQuery turns the query of POST /fault into fault words, in a fixed
// order: set= first, then latency, jitter, bandwidth, loss, reset,
// blackhole. Unknown keys are passed on, so the parser names them.
func faultQuery(r *http.Request) string {
	q := lenientQuery(r.URL.RawQuery)
	var words []string
	if s := q.Get("set"); s != "" {
		words = append(words, s)
	}
	known := map[string]bool{"set": true}
	for _, k := range []string{"latency", "jitter", "bandwidth", "loss"} {
		known[k] = true
		if q.Has(k) {
			words = append(words, k+"="+q.Get(k))
		}
	}
	for _, k := range []string{"reset", "blackhole"} {
		known[k] = true
		if q.Has(k) && q.Get(k) != "false" && q.Get(k) != "0" {
			words = append(words, k)
		}
	}
	var unknown []string
	for k := range q {
		if !known[k] {
			unknown = append(unknown, k+"="+q.Get(k))
		}
	}
	sort.Strings(unknown)
	return strings.Join(append(words, unknown...), " ")
}

// lenientQuery parses a query string like url.ParseQuery, but keeps a
// value that is not valid percent-encoding as written: "loss=2%" typed
// into curl means 2 percent, not a broken escape to be dropped.
func lenientQuery(raw string) url.Values {
	q := url.Values{}
	for _, kv := range strings.Split(raw, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if u, err := url.QueryUnescape(k); err == nil {
			k = u
		}
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		q.Add(k, v)
	}
	return q
}
