package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// FieldError is a config field with an unusable value. Every library
// config in this module reports one, so a caller maps it to its own name
// for the field (cmd/stampede: a flag) in one place.
type FieldError struct {
	// Field is the field's path, led by the type that owns it:
	// "Client.MsgSize", "Server.Backlog", "Storm.Duration".
	Field string
	// Reason says what is wrong, with the value given: "must not be
	// negative, got -1". Another field it names is written {Path}
	// ("needs {Server.Store}"), so that Render can name it as its caller
	// does; a reason that begins with its own field so written
	// ("{A} and {B}: give both") is the whole message.
	Reason string
	// Err, if set, is the error the reason was taken from (a policy's own
	// *backoff.InvalidError), for errors.As.
	Err error
}

// Error returns "FIELD: REASON", fields named by their paths.
func (e *FieldError) Error() string { return e.Render(func(f string) string { return f }) }

// fieldRef is a field named in a reason: {Server.Store}.
var fieldRef = regexp.MustCompile(`\{([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+)\}`)

// Render returns the error with every field, its own and the ones its
// reason names, written as name gives it (a command line: its flag).
func (e *FieldError) Render(name func(field string) string) string {
	reason := fieldRef.ReplaceAllStringFunc(e.Reason, func(m string) string { return name(m[1 : len(m)-1]) })
	if strings.HasPrefix(e.Reason, "{"+e.Field+"}") {
		return reason // it names its field itself: "{A} and {B}: give both"
	}
	return name(e.Field) + ": " + reason
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// Errorf returns a *FieldError on field with a formatted reason; a %w
// verb sets Err.
func Errorf(field, format string, a ...any) error {
	e := fmt.Errorf(format, a...)
	return &FieldError{Field: field, Reason: e.Error(), Err: errors.Unwrap(e)}
}

// Wrap returns err as a *FieldError on field: err itself if it is one
// already, else one whose reason is err's text. Nil stays nil.
func Wrap(field string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return err
	}
	return &FieldError{Field: field, Reason: err.Error(), Err: err}
}
