package storm

import (
	"io"
	"time"

	"github.com/stampede-dev/stampede/hoststat"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
)

// AgentsDir is the folder of a results folder that holds each agent's own
// histogram logs, one folder per agent name.
const AgentsDir = folder.AgentsDir

// WriteResults writes the results folder of a run with folder.Write:
// summary.json, timeline.csv, the HdrHistogram logs (connect, ttr,
// message_rtt, resume .hlog), each agent's own logs, resources.csv and
// kernel.csv when their samplers are given, haproxy.csv when the run read
// a load balancer's counters, and report.html rendered from those files
// alone (as `stampede report DIR` renders it again). start is the run's
// start, the time axis of the CSVs.
func WriteResults(dir string, res *Result, sampler *hoststat.Sampler, kernel *hoststat.KernelSampler, start time.Time) error {
	return writeResults(dir, res, sampler, kernel, start, Config{})
}

// writeResults is WriteResults with cfg's sidecars, whose files are
// written before report.html, and cfg's secrets hidden.
func writeResults(dir string, res *Result, sampler *hoststat.Sampler, kernel *hoststat.KernelSampler, start time.Time, cfg Config) error {
	f := folder.Folder{
		Summary: res.Summary,
		Report:  res.Report,
		Agents:  res.Members,
		Secrets: cfg.Secrets(),
		Render:  report.Render,
	}
	if sampler != nil {
		f.Files = append(f.Files, folder.File{Name: results.ResourcesFile, Write: func(w io.Writer) error {
			return hoststat.WriteResourcesCSV(w, start, sampler.Samples())
		}})
	}
	if kernel != nil {
		f.Files = append(f.Files, folder.File{Name: results.KernelFile, Write: func(w io.Writer) error { return kernel.WriteCSV(w, start) }})
	}
	if res.HAProxy != nil {
		f.Files = append(f.Files, folder.File{Name: results.HAProxyFile, Write: func(w io.Writer) error { return res.HAProxy.WriteCSV(w, start) }})
	}
	for _, sc := range cfg.Sidecars {
		f.Extra = append(f.Extra, sc)
	}
	return folder.Write(dir, f)
}

// Secrets names what the run's results must hide besides what every text
// hides: its --secret-header names, and the values of its secret headers
// and of the passwords in its URLs (fleet, store, NATS), the OTLP
// headers' values and SecretValues.
func (c Config) Secrets() redact.Policy {
	f := c.Fleet
	values := redact.Values(f.Header, f.SecretHeaders, f.URL, c.Target.Store, c.Hub.NATS)
	values = append(values, c.OTLP.Secrets()...)
	return redact.Policy{Headers: f.SecretHeaders, Values: append(values, c.SecretValues...)}
}
