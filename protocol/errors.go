package protocol

import (
	"errors"
	"strconv"
)

// Sentinel causes of a decoding *Error, for errors.Is.
var (
	// ErrTooLarge: the frame is longer than MaxFrameSize.
	ErrTooLarge = errors.New("frame too large")
	// ErrSyntax: the frame is not one JSON object.
	ErrSyntax = errors.New("bad JSON")
	// ErrUnknownType: "type" names no frame type.
	ErrUnknownType = errors.New("unknown frame type")
	// ErrMissingField: a field the type requires is absent.
	ErrMissingField = errors.New("missing field")
	// ErrBadField: a field has the wrong JSON type, an invalid value or
	// appears twice.
	ErrBadField = errors.New("bad field")
)

// WebSocket close codes a server uses for protocol errors.
const (
	// ClosePolicy (1008) closes a connection that sent a malformed frame
	// or a frame a client may not send.
	ClosePolicy = 1008
	// CloseTooLarge (1009) closes a connection that sent a frame over
	// MaxFrameSize.
	CloseTooLarge = 1009
)

// Error is a frame Decode refused. Cause is one of the sentinel errors
// above; errors.Is(err, ErrSyntax) and friends match it.
type Error struct {
	// Cause is the sentinel kind of the error.
	Cause error
	// Field names the offending field, "" when none applies.
	Field string
	// Offset is the byte offset in the frame where the error was found.
	Offset int
	// Detail is a short explanation.
	Detail string
}

func (e *Error) Error() string {
	s := "protocol: " + e.Cause.Error()
	if e.Field != "" {
		s += " " + strconv.Quote(e.Field)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + " at offset " + strconv.Itoa(e.Offset)
}

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }

// CloseCode is the WebSocket close code a server answers this error with:
// CloseTooLarge for ErrTooLarge, ClosePolicy otherwise.
func (e *Error) CloseCode() uint16 {
	if e.Cause == ErrTooLarge {
		return CloseTooLarge
	}
	return ClosePolicy
}
