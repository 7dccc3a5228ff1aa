// Package report renders results for people: the text a command prints
// at a terminal (WriteText, WriteComparison) and report.html, one
// self-contained page per results folder, or a comparison of several,
// that a person would rather look at than read. It shows connected
// clients and attempts per 100 ms with the chaos events shaded, failures
// by class, the latency percentile plots from the HdrHistogram logs,
// resources and kernel counters over time, and the summary's figures in
// tables; several runs (a bench) get the policies
// side by side first.
//
// A run is loaded from its folder alone (Load: summary.json, timeline.csv,
// *.hlog, resources.csv, kernel.csv), so `stampede report DIR` renders
// later exactly what the run rendered at its end.
//
// Why a vendored plotting library: the page must open from disk with no
// network (a CI artifact, a laptop on a plane), so everything is inlined,
// and drawing axes, log scales, legends and hover read-outs by hand would
// be more code than the report itself. uPlot (MIT, assets/) is small
// (about 50 KB minified, one file, no dependencies), draws tens of
// thousands of points on a canvas quickly, and is well kept. Its files are
// embedded with go:embed and inlined into the page, with the data as JSON.
package report
