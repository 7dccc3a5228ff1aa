package wsdial_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/stampede-dev/stampede/connerr"
	"github.com/stampede-dev/stampede/wsdial"
)

// A failed attempt is a *connerr.Error: branch on its class and
// retryability, and keep its text as the client's last error.
func ExampleDialer_Dial() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more

	d := &wsdial.Dialer{ConnectTimeout: 2 * time.Second, SynRetries: 2}
	_, err := d.Dial(context.Background(), "ws://"+addr+"/")
	var e *connerr.Error
	if errors.As(err, &e) {
		fmt.Println(e.Class, e.Retryable())
	}
	// Output: refused true
}
