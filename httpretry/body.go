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

// bodySource returns a function that gives the body of each attempt of
// req, nil for a request without a body. When the request may be repeated
// every attempt gets a fresh copy: from req.GetBody when set (http.NewRequest
// sets it for bytes, strings and their readers), otherwise from a buffer of
// the body read once. A request that is sent once streams its body as it
// is. The original body is closed either way, as a RoundTripper must.
func bodySource(req *http.Request, repeat bool) (bodyFunc, error) {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return bodyFunc{}, nil
	case !repeat:
		return bodyFunc{get: func() (io.ReadCloser, error) { return req.Body, nil }}, nil
	case req.GetBody != nil:
		req.Body.Close() // every attempt reads its own copy
		return bodyFunc{get: req.GetBody, replay: true}, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return bodyFunc{}, err
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return bodyFunc{get: get, replay: true}, nil
}

// bodyFunc gives the body of one attempt. get is nil for a request without
// a body; replay says whether get may be called again for a fresh copy,
// which also lets net/http resend the body on a stale keep-alive connection.
type bodyFunc struct {
	get    func() (io.ReadCloser, error)
	replay bool
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
