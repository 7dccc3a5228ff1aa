package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// proxyPrefix turns fault words into a schedule entry for the parser.
const proxyPrefix = "at 0s proxy "

// ParseProxyFault parses a set of proxy faults written as in a schedule's
// proxy event, without "proxy" and "for", e.g. "latency=200ms jitter=20ms"
// or "loss=1%". "" and "off" are the empty set (every fault off).
func ParseProxyFault(words string) (ProxyFault, error) {
	w := strings.TrimSpace(words)
	if w == "" || w == "off" {
		return ProxyFault{}, nil
	}
	if strings.ContainsAny(w, ";#\n\r") {
		return ProxyFault{}, fmt.Errorf("proxy fault %q: expected fault words such as latency=200ms, found a separator", words)
	}
	s, err := Parse(proxyPrefix + w + " for 1s")
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return ProxyFault{}, fmt.Errorf("proxy fault %q, col %d: %s", w, max(1, se.Col-len(proxyPrefix)), se.Msg)
		}
		return ProxyFault{}, fmt.Errorf("proxy fault %q: %w", w, err)
	}
	return s.Entries[0].Event.Proxy, nil
}

// ProxyController is what the control API drives: a ProxyGroup, or one
// FaultProxy (LocalController).
type ProxyController interface {
	// Apply switches the fault set f on (the zero set: all off).
	Apply(ctx context.Context, f ProxyFault) error
	// Stats returns the counters, summed over processes.
	Stats(ctx context.Context) (ProxyStats, error)
}

// LocalController adapts a FaultProxy in this process to ProxyController.
func LocalController(p *FaultProxy) ProxyController { return localControl{p} }

type localControl struct{ p *FaultProxy }

func (c localControl) Apply(_ context.Context, f ProxyFault) error {
	c.p.Set(f)
	return nil
}

func (c localControl) Stats(context.Context) (ProxyStats, error) { return c.p.Stats(), nil }

// ProxyControlHandler returns the HTTP control API of a fault proxy (a
// FaultProxy or a ProxyGroup):
//
//	GET    /stats                               ProxyStats as JSON
//	GET    /fault                               the active faults, in schedule words
//	POST   /fault?latency=200ms&jitter=20ms     switch faults on (replacing the set)
//	POST   /fault?bandwidth=1MB/s | ?loss=1% | ?reset | ?blackhole
//	POST   /fault?set=latency%3D200ms+loss%3D1%25   the same, as one string of words
//	DELETE /fault                               every fault off (so is a POST with none)
//
// A POST or DELETE answers 204 when applied, 400 with one line of text for
// a fault set that does not parse.
func ProxyControlHandler(c ProxyController) http.Handler {
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
		fault := st.Fault
		if fault == "" {
			fault = "off"
		}
		fmt.Fprintln(w, fault)
	})
	apply := func(w http.ResponseWriter, r *http.Request, f ProxyFault) {
		if err := c.Apply(r.Context(), f); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		f, err := ParseProxyFault(faultQuery(r))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		apply(w, r, f)
	})
	mux.HandleFunc("DELETE /fault", func(w http.ResponseWriter, r *http.Request) { apply(w, r, ProxyFault{}) })
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
