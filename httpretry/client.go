package httpretry

import "net/http"

// Client sends single requests with retries and reports every request that
// did not succeed as an error. It does not follow redirects (like curl
// without -L); for redirects, cookies and the rest of http.Client, put a
// Transport in an http.Client.
type Client struct {
	t *Transport
}

// New validates cfg and returns a Client using it.
func New(cfg Config) (*Client, error) {
	t, err := NewTransport(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{t: t}, nil
}

// Transport returns the client's RoundTripper.
func (c *Client) Transport() *Transport { return c.t }

// Do sends req, retrying as configured. It returns the final response when
// its status is below 400 (the caller closes its body), and otherwise a nil
// response and a *RetryError saying why the request failed: a status that
// is not retried, retries exhausted, a Retry-After above the cap, a
// connection error, or the request's context ending. The body of a failed
// final response is drained and closed.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.t.do(req)
	if err != nil {
		if resp != nil {
			drain(resp.Body)
		}
		return nil, err
	}
	return resp, nil
}
