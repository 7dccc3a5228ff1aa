// Package realservers tests the session protocols (package session, run by
// the loadgen's reactors) against real servers, each started by its test
// on its own loopback port, killed and started again: Socket.IO, graphql-ws
// with ws, and aedes (npm, in node/, installed with npm ci from its
// package-lock.json). It has no code of its own.
package realservers
