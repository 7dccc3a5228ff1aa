// Package spec holds the knobs of a fleet (Client) and of a server
// (Server): every field with its doc comment, its default and its check in
// one place. The roles (loadgen, target), the orchestrator (storm), the
// drill, the HTTP fleet and the simulator embed these specs instead of
// restating them, and a spec travels whole (as JSON) in the plans that
// storm hands its agents, so a new field reaches every process with no
// other edit.
//
// The zero value of every field means its default (WithDefaults fills
// them in). Validate reports the first unusable field as a *FieldError
// naming the field ("Server.Backlog"), never a command-line flag: only
// cmd/stampede knows flags, and maps a field error to one.
//
// spec is near a leaf: besides the standard library it imports only the
// reconnect policies (backoff), the accept rate's bounds it shares with
// the fault proxy (fault) and the redaction of secrets in URLs
// (internal/redact), never a role or cmd.
package spec
