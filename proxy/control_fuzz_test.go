package proxy

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// FuzzFaultQuery: no query of POST /fault makes its parsing panic; where
// the query is valid percent-encoding, lenientQuery reads it as
// url.ParseQuery does; and every parameter given reaches the fault words,
// so none is dropped without the parser seeing it.
func FuzzFaultQuery(f *testing.F) {
	for _, s := range []string{
		"latency=200ms&jitter=20ms", "loss=2%", "loss=2%25", "set=latency%3D200ms+loss%3D1%25",
		"reset", "reset=false&blackhole=0", "bandwidth=1MB/s", "x=1&y", "%zz=%zz", "a=1&a=2", ";=;", "=&=&",
		"latency", "set=&latency=", "%00=%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q := lenientQuery(raw)
		if want, err := url.ParseQuery(raw); err == nil && !(len(want) == 0 && len(q) == 0) && !reflect.DeepEqual(q, want) {
			t.Fatalf("%q: lenientQuery %v, url.ParseQuery %v", raw, q, want)
		}
		r := httptest.NewRequest("POST", "http://127.0.0.1/fault", nil)
		r.URL.RawQuery = raw
		words := faultQuery(r)
		for k, vs := range q {
			switch {
			case k == "set":
				if vs[0] != "" && !strings.Contains(words, vs[0]) {
					t.Fatalf("%q: set=%q missing from %q", raw, vs[0], words)
				}
			case k == "reset" || k == "blackhole":
				if on := vs[0] != "false" && vs[0] != "0"; on && !strings.Contains(words, k) {
					t.Fatalf("%q: %s=%q gives %q", raw, k, vs[0], words)
				}
			default:
				if !strings.Contains(words, k+"="+vs[0]) {
					t.Fatalf("%q: %s=%q missing from %q", raw, k, vs[0], words)
				}
			}
		}
	})
}
