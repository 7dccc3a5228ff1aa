// Package folder is the one writer and reader of results folders: every
// file of every kind of folder (a run's, a bench's, an advise search's, an
// HTTP fleet's, a simulation's, the mitigations bench's, and report.html)
// is created, written, renamed and read here, one way, so that a folder
// holds only what stampede wrote and nobody else can read it.
package folder
