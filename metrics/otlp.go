package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc/credentials"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

// The OTLP protocols an OTLPConfig may name.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultOTLPInterval is the time between OTLP exports when
// OTLPConfig.Interval is zero.
const DefaultOTLPInterval = 10 * time.Second

// MinOTLPInterval is the shortest time between OTLP exports: each is a
// request to the collector (1ns sent 3,562 in 3 s).
const MinOTLPInterval = 100 * time.Millisecond

// OTLPConfig says where a run's metrics go over OTLP, the OpenTelemetry
// protocol: the same figures as the Prometheus endpoint, named and
// measured as OpenTelemetry names them (Names), pushed every Interval and
// once more when the run ends. The zero value exports nothing.
type OTLPConfig struct {
	// Endpoint is the collector's URL. http:// and https:// send OTLP
	// over HTTP (protobuf) to /v1/metrics, or to the URL's own path when
	// it has one; grpc:// (plaintext) and grpcs:// (TLS) send OTLP over
	// gRPC. "" exports nothing.
	Endpoint string
	// Protocol, if set, overrides the choice the scheme makes:
	// ProtocolHTTP or ProtocolGRPC ("http" and "grpc" too). With gRPC,
	// http:// means plaintext and https:// TLS.
	Protocol string
	// Headers are sent with every export, e.g. a collector's API key.
	// Their values are secret: never written to the results, logs or
	// errors (Secrets), and never passed to another process.
	Headers map[string]string `json:"-"`
	// Interval is the time between exports; 0 means DefaultOTLPInterval.
	Interval time.Duration
	// Insecure accepts any server certificate over https:// or grpcs://.
	Insecure bool
}

// Validate checks c before anything connects; the errors are field
// errors on Metrics.OTLP.*.
func (c OTLPConfig) Validate() error {
	if c.Endpoint == "" {
		if c.Protocol != "" || len(c.Headers) > 0 || c.Interval != 0 {
			return spec.Errorf("Metrics.OTLP.Endpoint", "needed with the other OTLP settings")
		}
		return nil
	}
	if _, _, err := c.target(); err != nil {
		return err
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return spec.Errorf("Metrics.OTLP.Headers", "%q is not a header name; want NAME=VALUE", k)
		}
	}
	if c.Interval < 0 || (c.Interval > 0 && c.Interval < MinOTLPInterval) {
		return spec.Errorf("Metrics.OTLP.Interval", "must be 0 (the default) or at least %s, got %s", MinOTLPInterval, c.Interval)
	}
	return nil
}

// target returns the protocol and the endpoint's URL, with http(s) for
// the HTTP exporter's scheme.
func (c OTLPConfig) target() (proto string, u *url.URL, err error) {
	u, err = url.Parse(c.Endpoint)
	if err != nil || u.Host == "" {
		return "", nil, spec.Errorf("Metrics.OTLP.Endpoint", "%q: want http[s]://HOST:PORT or grpc[s]://HOST:PORT", redact.URL(c.Endpoint))
	}
	switch u.Scheme {
	case "http", "https":
		proto = ProtocolHTTP
	case "grpc", "grpcs":
		proto = ProtocolGRPC
	default:
		return "", nil, spec.Errorf("Metrics.OTLP.Endpoint", "%q: scheme %q; want http, https, grpc or grpcs", redact.URL(c.Endpoint), u.Scheme)
	}
	switch c.Protocol {
	case "":
	case ProtocolHTTP, "http":
		proto = ProtocolHTTP
	case ProtocolGRPC:
		proto = ProtocolGRPC
	default:
		return "", nil, spec.Errorf("Metrics.OTLP.Protocol", "%q; want %s or %s", c.Protocol, ProtocolGRPC, ProtocolHTTP)
	}
	if proto == ProtocolHTTP && (u.Scheme == "grpc" || u.Scheme == "grpcs") {
		return "", nil, spec.Errorf("Metrics.OTLP.Protocol", "%s with a %s:// endpoint; give http:// or https://", proto, u.Scheme)
	}
	return proto, u, nil
}

// Secrets returns the values that must appear in no output: the
// headers' values, and the endpoint's password.
func (c OTLPConfig) Secrets() []string {
	h := http.Header{}
	for _, v := range c.Headers {
		h.Add("Authorization", v) // every OTLP header is secret
	}
	return redact.Values(h, nil, c.Endpoint)
}

// OTLPResource names the process that exports: OTLP's resource attributes
// stampede.run.id, stampede.role, host.name and stampede.agent, with
// service.name "stampede".
type OTLPResource struct {
	RunID, Role, Host, Agent string
}

// OTLP exports an Exporter's figures over OTLP until Close.
type OTLP struct {
	mp      *sdkmetric.MeterProvider
	reg     metric.Registration
	secrets []string
}

// StartOTLP starts exporting e's figures as c says, labelled with res,
// every c.Interval from now; errors of the exports under way go to log
// with c's secrets hidden. Close sends the final figures.
func StartOTLP(ctx context.Context, e *Exporter, c OTLPConfig, res OTLPResource, log io.Writer) (*OTLP, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	secrets := c.Secrets()
	exp, err := newOTLPExporter(ctx, c)
	if err != nil {
		return nil, spec.Errorf("Metrics.OTLP.Endpoint", "%s", redact.Scrub(err.Error(), secrets))
	}
	interval := c.Interval
	if interval == 0 {
		interval = DefaultOTLPInterval
	}
	setErrorLog(log, secrets)
	r := resource.NewSchemaless(
		attribute.String("service.name", "stampede"),
		attribute.String("stampede.run.id", res.RunID),
		attribute.String("stampede.role", res.Role),
		attribute.String("host.name", res.Host),
		attribute.String("stampede.agent", res.Agent),
	)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(r),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	reg, err := register(mp.Meter("github.com/stampede-dev/stampede/metrics"), e)
	if err != nil {
		_ = mp.Shutdown(ctx)
		return nil, err
	}
	return &OTLP{mp: mp, reg: reg, secrets: secrets}, nil
}

// Close exports the figures once more (the run's final ones, after
// SetSummary) and stops; ctx bounds the final export.
func (o *OTLP) Close(ctx context.Context) error {
	err := o.mp.Shutdown(ctx) // collects and exports once more first
	if err != nil {
		return errors.New(redact.Scrub(err.Error(), o.secrets))
	}
	return nil
}

// newOTLPExporter returns the HTTP or gRPC metric exporter for c.
func newOTLPExporter(ctx context.Context, c OTLPConfig) (sdkmetric.Exporter, error) {
	proto, u, err := c.target()
	if err != nil {
		return nil, err
	}
	secure := u.Scheme == "https" || u.Scheme == "grpcs"
	tlsConf := &tls.Config{InsecureSkipVerify: c.Insecure} //nolint:gosec // the user's --insecure
	if proto == ProtocolGRPC {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(u.Host), otlpmetricgrpc.WithHeaders(c.Headers)}
		if secure {
			opts = append(opts, otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(tlsConf)))
		} else {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	hu := *u
	if hu.Path == "" || hu.Path == "/" {
		hu.Path = "/v1/metrics"
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(hu.String()), otlpmetrichttp.WithHeaders(c.Headers)}
	if secure {
		opts = append(opts, otlpmetrichttp.WithTLSClientConfig(tlsConf))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// register creates an observable instrument per family and one callback
// that observes the exporter's figures at each collection.
func register(m metric.Meter, e *Exporter) (metric.Registration, error) {
	insts := map[*family]metric.Observable{}
	var all []metric.Observable
	for _, f := range families {
		var inst metric.Observable
		var err error
		desc, unit := metric.WithDescription(f.help), metric.WithUnit(f.unit)
		switch {
		case f.counter && f.integer:
			inst, err = m.Int64ObservableCounter(f.otel, desc, unit)
		case f.counter:
			inst, err = m.Float64ObservableCounter(f.otel, desc, unit)
		case f.integer:
			inst, err = m.Int64ObservableGauge(f.otel, desc, unit)
		default:
			inst, err = m.Float64ObservableGauge(f.otel, desc, unit)
		}
		if err != nil {
			return nil, fmt.Errorf("metrics: %s: %w", f.otel, err)
		}
		insts[f] = inst
		all = append(all, inst)
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, fg := range e.figures() {
			kv := make([]attribute.KeyValue, len(fg.labels))
			for i, l := range fg.labels {
				kv[i] = attribute.String(fg.fam.attrs[i], l)
			}
			opt := metric.WithAttributes(kv...)
			switch inst := insts[fg.fam].(type) {
			case metric.Int64Observable:
				o.ObserveInt64(inst, int64(fg.v), opt)
			case metric.Float64Observable:
				o.ObserveFloat64(inst, fg.v, opt)
			}
		}
		return nil
	}, all...)
}

// errorLog is where the OpenTelemetry SDK's errors go (a failed periodic
// export), secrets hidden; the SDK has one handler per process.
var errorLog struct {
	sync.Mutex
	w       io.Writer
	secrets []string
	last    string
}

func setErrorLog(w io.Writer, secrets []string) {
	errorLog.Lock()
	errorLog.w, errorLog.secrets = w, slices.Clone(secrets)
	errorLog.Unlock()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		errorLog.Lock()
		defer errorLog.Unlock()
		msg := redact.Scrub(err.Error(), errorLog.secrets)
		if errorLog.w == nil || msg == errorLog.last {
			return // one line per new error, not one per interval
		}
		errorLog.last = msg
		fmt.Fprintf(errorLog.w, "metrics: otlp: %s\n", msg)
	}))
}
