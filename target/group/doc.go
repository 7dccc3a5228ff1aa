// Package group runs the target as processes: `stampede target` (Run), a
// Group of server processes sharing one port through SO_REUSEPORT with
// their retry ledger, and the HTTP control API (ControlHandler) through
// which a chaos supervisor stalls, restarts or reshapes them. The server
// each process runs is package target's.
//
// The package is Linux-only.
package group
