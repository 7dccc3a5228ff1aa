package group

// The SIGKILL test runs its group's processes on the embedded JetStream
// store (jetstream://); package target opens stores by URL but links no
// networked backend, so this test binary, whose processes are the group's,
// imports it, as cmd/stampede does.
import _ "github.com/stampede-dev/stampede/store/jsstore"
