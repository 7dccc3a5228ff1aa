// Package summary sums a run up: Summarize turns a results.Report and its
// events into the Summary that summary.json holds (per-event recovery, the
// herd figures, connects, latencies, the host figures), detects outages
// when nothing supervised the target, and finishes the recovery partials
// of several loadgens. It neither reads nor writes files (package folder
// does) and prints nothing (package report does).
package summary
