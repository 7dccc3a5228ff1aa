// Package realservers tests the session protocols (package session, run by
// the loadgen's reactors) against real servers, each started by its test
// on its own loopback port, killed and started again: Socket.IO, graphql-ws
// with ws, and aedes (npm, in node/, installed with npm ci from its
// package-lock.json); mochi-mqtt and centrifuge-go (modules of their own in
// mochi/ and centrifuge/, from the Go module proxy); ActionCable with puma
// (Debian's packages, ruby/cable.rb); RabbitMQ's Web STOMP and Web MQTT
// (the machine's service, and a node of the test's own where the test
// kills it); and stand-ins for Phoenix and SignalR, which have no server
// installable here. It has no code of its own.
package realservers
