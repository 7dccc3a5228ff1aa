package httpretry

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// drainLimit bounds how much of a retried response's body is read before
// closing it: enough for the connection to be reused after a short error
// page, not so much that a huge body is downloaded for nothing.
const drainLimit = 64 << 10

// replayable returns a function that gives a fresh copy of req's body for
// every attempt. It uses req.GetBody when set (http.NewRequest sets it for
// bytes, strings and their readers); otherwise it reads the body once into
// memory and closes it. A request without a body gives nil.
func replayable(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		return req.GetBody, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, nil
}

// drain reads a little of a response body and closes it, so the connection
// can carry the next attempt.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	_ = body.Close()
}

// cancelBody releases an attempt's context when the caller closes the body
// of the response it returned: the attempt lasts until then.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body, then releases the attempt's context.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
