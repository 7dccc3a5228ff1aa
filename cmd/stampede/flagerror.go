package main

import (
	"errors"
	"fmt"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/target"
)

// flagError rewrites a library config error on a field that has a flag as
// one line naming the flag (`--backlog: -1 must not be negative`); any
// other error is returned as it is. One function serves every command, so
// `run` names --backlog or --msg-size exactly as `target` and `loadgen` do.
func flagError(err error) error {
	var (
		te *target.ConfigError
		le *loadgen.ConfigError
		pe *proxy.ConfigError
	)
	field, reason, flags := "", "", map[string]string(nil)
	switch {
	case errors.As(err, &te):
		field, reason, flags = te.Field, te.Reason, configFlags
	case errors.As(err, &le):
		field, reason, flags = le.Field, le.Reason, loadgenFlags
	case errors.As(err, &pe):
		field, reason, flags = pe.Field, pe.Reason, proxyFlags
	}
	if name, ok := flags[field]; ok {
		return fmt.Errorf("--%s: %s", name, reason)
	}
	return err
}
