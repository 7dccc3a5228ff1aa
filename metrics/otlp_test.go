package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
)

// TestOTLPConfigValidate: each bad setting is a field error on its own
// field; the zero value and the usual endpoints are valid.
func TestOTLPConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     OTLPConfig
		field string // "" for valid
	}{
		{"zero: no export", OTLPConfig{}, ""},
		{"http", OTLPConfig{Endpoint: "http://127.0.0.1:4318"}, ""},
		{"https with a path", OTLPConfig{Endpoint: "https://otel.example:443/otlp/v1/metrics"}, ""},
		{"grpc", OTLPConfig{Endpoint: "grpc://127.0.0.1:4317"}, ""},
		{"grpc over an http URL", OTLPConfig{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"}, ""},
		{"interval without endpoint", OTLPConfig{Interval: time.Second}, "Metrics.OTLP.Endpoint"},
		{"headers without endpoint", OTLPConfig{Headers: map[string]string{"k": "v"}}, "Metrics.OTLP.Endpoint"},
		{"no scheme", OTLPConfig{Endpoint: "127.0.0.1:4318"}, "Metrics.OTLP.Endpoint"},
		{"other scheme", OTLPConfig{Endpoint: "ftp://127.0.0.1:4318"}, "Metrics.OTLP.Endpoint"},
		{"unknown protocol", OTLPConfig{Endpoint: "http://127.0.0.1:4318", Protocol: "thrift"}, "Metrics.OTLP.Protocol"},
		{"http over a grpc URL", OTLPConfig{Endpoint: "grpc://127.0.0.1:4317", Protocol: "http/protobuf"}, "Metrics.OTLP.Protocol"},
		{"header name with a colon", OTLPConfig{Endpoint: "http://h:1", Headers: map[string]string{"a:b": "v"}}, "Metrics.OTLP.Headers"},
		{"negative interval", OTLPConfig{Endpoint: "http://h:1", Interval: -time.Second}, "Metrics.OTLP.Interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			var fe *spec.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("want a field error on %s, got %v", tc.field, err)
			}
		})
	}
}

// TestOTLPHTTP exports to a real HTTP server standing in for a collector:
// every family arrives by its OpenTelemetry name, with the header, the
// resource attributes and the final figures of Close; the header's value
// is in no error. (lab/otelcol tests a real collector, over gRPC too.)
func TestOTLPHTTP(t *testing.T) {
	const secret = "hdr-S3cret"
	var mu sync.Mutex
	var reqs []*colmetricspb.ExportMetricsServiceRequest
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(b, req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs, keys = append(reqs, req), append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(srv.Close)

	e := New(Config{RunID: "run-1", Clients: 3})
	e.SetResources(func() []Resource {
		return []Resource{{Role: "loadgen", Host: "h1", Processes: 1, RSSBytes: 1 << 20, FDs: 9, CPUSeconds: 0.5}}
	})
	var logBuf bytes.Buffer
	o, err := StartOTLP(context.Background(), e, OTLPConfig{Endpoint: srv.URL, Interval: time.Hour,
		Headers: map[string]string{"X-Api-Key": secret}}, OTLPResource{RunID: "run-1", Role: "coordinator", Host: "h0", Agent: "a"}, &logBuf)
	if err != nil {
		t.Fatal(err)
	}
	e.Observe(2*time.Second, loadgen.Stats{Attempts: 7, Successes: 3, Connected: 3}, 1)
	if err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 1 || keys[0] != secret {
		t.Fatalf("want one export (the final one, interval 1h) carrying the header; got %d, headers %q", len(reqs), keys)
	}
	rm := reqs[0].ResourceMetrics[0]
	res := map[string]string{}
	for _, kv := range rm.Resource.Attributes {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	if res["stampede.run.id"] != "run-1" || res["stampede.role"] != "coordinator" || res["host.name"] != "h0" || res["service.name"] != "stampede" {
		t.Errorf("resource attributes %v", res)
	}
	got := map[string]bool{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		got[m.Name] = true
		if m.Name == "stampede.connect.attempts" {
			if v := m.GetSum().DataPoints[0].GetAsInt(); v != 7 || !m.GetSum().IsMonotonic {
				t.Errorf("attempts: %d (monotonic %v), want 7, monotonic", v, m.GetSum().IsMonotonic)
			}
		}
	}
	for _, n := range Names() {
		// Recovery and the chaos event are exported only when known.
		if !got[n[1]] && !strings.HasPrefix(n[1], "stampede.recovery.") && n[1] != "stampede.chaos.active" {
			t.Errorf("%s (%s) was not exported", n[1], n[0])
		}
	}
	if strings.Contains(logBuf.String(), secret) {
		t.Errorf("the header's value is in the log: %s", logBuf.String())
	}
}

// TestOTLPErrorsHideSecrets: an export that fails names no header value
// nor the endpoint's password.
func TestOTLPErrorsHideSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "rejected key "+r.Header.Get("X-Api-Key"), http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	const secret = "k3y-S3cret"
	var logBuf bytes.Buffer
	o, err := StartOTLP(context.Background(), New(Config{}), OTLPConfig{Endpoint: strings.Replace(srv.URL, "://", "://u:pw-"+secret+"@", 1),
		Headers: map[string]string{"X-Api-Key": secret}, Interval: time.Hour}, OTLPResource{}, &logBuf)
	if err != nil {
		t.Fatal(err)
	}
	err = o.Close(context.Background())
	if err == nil {
		t.Fatal("the export was rejected, but Close returned no error")
	}
	if strings.Contains(err.Error()+logBuf.String(), secret) {
		t.Errorf("a secret is in the error or the log: %v\n%s", err, logBuf.String())
	}
}
