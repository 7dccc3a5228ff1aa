// Package listener holds the target's sockets before any connection: the
// listening socket (a chosen, changeable backlog, TCP_DEFER_ACCEPT, a raw
// accept that yields a bare fd), membership of a port's SO_REUSEPORT
// group, the reservation that keeps a group's port while no member
// listens, and the free ports a target is started on.
//
// It is Linux-only.
package listener
