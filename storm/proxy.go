package storm

import (
	"context"
	"fmt"
	"io"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/proxy"
	"github.com/stampede-dev/stampede/results"
)

// roleProxy names the fault proxy's processes in resources.csv and
// summary.json "resources".
const roleProxy = results.RoleProxy

// startProxy starts the fault proxy in front of the target at upstream: an
// SO_REUSEPORT group of `stampede proxy` processes, as many as the fleet
// needs (each relayed connection takes two open files), on a free port
// outside the ephemeral range. Its upstream sockets use the fleet's source
// addresses (towards another port than the fleet's, so they share no
// ephemeral ports), and its draws the fleet's seed.
func startProxy(ctx context.Context, exe, upstream string, fleet loadgen.Config, logw io.Writer) (*proxy.Group, error) {
	procs := proxy.ProcsFor(fleet.Clients)
	var g *proxy.Group
	err := onFreePort(func(addr string) (err error) {
		g, err = proxy.StartGroup(ctx, proxy.GroupConfig{
			Exe:   exe,
			Procs: procs,
			Proxy: proxy.Config{
				Listen:   addr,
				Upstream: upstream,
				Seed:     fleet.Seed,
			},
			SourceIPs: fleet.SourceIPs,
			Stderr:    prefixWriter(logw, roleProxy),
			Log:       func(f string, a ...any) { fmt.Fprintf(logw, f+"\n", a...) },
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("starting the fault proxy: %w", err)
	}
	fmt.Fprintf(logw, "proxy: %d process(es) on %s in front of the target\n", procs, g.Addr())
	return g, nil
}
