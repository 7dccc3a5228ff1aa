// Package cluster is a storm's coordinator: it splits a fleet into
// shares, places agents (package agent) with their typed plans, starts
// them on one barrier, relays the chaos supervisor's requests to the
// target and proxy agents (RemoteTarget, RemoteProxy), watches them for
// loss and merges their results. It starts agents as local child
// processes (Local) or in this process (InProcess); cluster/hub carries
// them to other hosts over NATS.
package cluster
