package live

import (
	"net"
	"time"

	"github.com/stampede-dev/stampede/controlapi"
	"github.com/stampede-dev/stampede/spec"
)

// Defaults of Config.
const (
	// DefaultAddr is loopback with a port the kernel picks.
	DefaultAddr = "127.0.0.1:0"
	// DefaultEvery is the time between frames: the page is updated at
	// least once a second.
	DefaultEvery = 500 * time.Millisecond
	// DefaultBuffer is how many frames a subscriber may be behind before
	// its stream drops them.
	DefaultBuffer = 4
	// DefaultWriteTimeout bounds one write to a browser: a stream that
	// takes no bytes for that long is ended.
	DefaultWriteTimeout = 10 * time.Second
	// FinishWait bounds the wait at a run's end for the open pages to
	// take the last frame (Server.Finish).
	FinishWait = 3 * time.Second
)

// Config says where and how the live page is served. Its zero value
// serves on loopback with a free port.
type Config struct {
	// Addr is host:port to listen on; "" means DefaultAddr. An address
	// beyond loopback needs TLSCert and TLSKey: the page's cookie and the
	// run's figures would cross a network in clear.
	Addr string `json:"addr,omitempty"`
	// TLSCert and TLSKey are PEM files; with them the page is served over
	// HTTPS.
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	// Every is the time between frames; 0 means DefaultEvery, and more
	// than a second is a second.
	Every time.Duration `json:"every,omitempty"`
	// Buffer is the frames each subscriber may hold unread; 0 means
	// DefaultBuffer.
	Buffer int `json:"buffer,omitempty"`
	// Announce, if set, is told the page's URL, token included, once the
	// server listens: the one place the token is shown.
	Announce func(url string) `json:"-"`
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Every <= 0 {
		c.Every = DefaultEvery
	}
	c.Every = min(c.Every, time.Second) // the page is updated at least once a second
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	return c
}

// Validate checks c before any socket opens.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return spec.Errorf("Live.Addr", "%q: want HOST:PORT, e.g. 127.0.0.1:0", c.Addr)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return spec.Errorf("Live.TLSCert", "{Live.TLSCert} and {Live.TLSKey}: give both")
	}
	if !controlapi.Loopback(c.Addr) && c.TLSCert == "" {
		return spec.Errorf("Live.Addr", "%s is beyond loopback: the page's cookie and the run's figures would cross the network in clear; give {Live.TLSCert} and {Live.TLSKey}", c.Addr)
	}
	return nil
}
