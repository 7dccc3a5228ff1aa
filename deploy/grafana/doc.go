// Package grafana holds stampede's Grafana dashboard, stampede.json, for
// the Prometheus metrics a run serves on --metrics-addr (package metrics).
// The package has no code; its test runs a real Prometheus against a
// real small run and evaluates every panel's query.
package grafana
