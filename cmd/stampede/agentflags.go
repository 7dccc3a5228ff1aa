package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/storm"
)

// defaultTokenFile is where a run with --agents keeps its token without
// --token-file.
const defaultTokenFile = "stampede.token"

// agentFlags are the flags of a run spread over agents on other hosts
// (run and loadgen); agentRunConfig maps them.
func agentFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "agents", Usage: "wait for `N` agents on other hosts (stampede agent --nats ...) and place the roles on them (docs/fleet.md)"},
		&cli.StringFlag{Name: "listen", Usage: "the embedded NATS server's `ADDR` that agents join at (default a free port on 127.0.0.1; e.g. 10.0.0.1:4250 for other hosts)"},
		&cli.BoolFlag{Name: "insecure-listen", Usage: "allow a --listen address beyond loopback without --tls-cert: agents' messages then cross the network in clear (a warning each run)"},
		&cli.StringFlag{Name: "token-file", Value: defaultTokenFile, Usage: "the run's token `FILE`: read when it exists, else a new random one is written (mode 0600); agents need a copy"},
		&cli.StringFlag{Name: "nats", Usage: "use the existing NATS server at `URL` instead of the embedded one"},
		&cli.StringFlag{Name: "nats-creds", Usage: "credentials `FILE` for --nats"},
		&cli.DurationFlag{Name: "agent-timeout", Value: storm.DefaultAgentTimeout, Usage: "give up when the --agents have not all joined within `D`"},
		&cli.StringFlag{Name: "on-agent-loss", Value: storm.LossFail, Usage: "`WHAT` a lost agent does to the run: fail (stop at once, exit 2, folder written) or continue (finish without it, report the rest)"},
		&cli.StringFlag{Name: "tls-cert", Usage: "the embedded NATS server's TLS certificate `FILE`"},
		&cli.StringFlag{Name: "tls-key", Usage: "the key `FILE` of --tls-cert"},
		&cli.StringFlag{Name: "ca", Usage: "certificate authority `FILE`: verifies the NATS server and, on the embedded one, requires agents' certificates"},
	}
}

// runAllowFlag is run's --allow-remote: with --agents, the hosts beyond
// loopback and the namespace hosts that the agents may be sent to load
// (the target's agent, on another network). loadgen's allowRemoteFlag
// plays this part too.
var runAllowFlag = &cli.StringSliceFlag{Name: "allow-remote", Usage: "with --agents: allow the agents' load to `HOST` or address prefix (10.244.0.0/16) beyond loopback and the namespace hosts 10.203.0.0/16; each agent also needs it in its own --allow-remote (repeatable)"}

// agentRunConfig maps the agent flags into cfg; without --agents they are
// refused, except --on-agent-loss.
func agentRunConfig(c *cli.Context, cfg *storm.Config) error {
	n := c.Int("agents")
	if n < 0 {
		return fmt.Errorf("--agents: must not be negative, got %d", n)
	}
	if n == 0 {
		for _, f := range []string{"listen", "insecure-listen", "nats", "nats-creds", "tls-cert", "tls-key", "ca", "agent-timeout", "token-file"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s: only with --agents N", f)
			}
		}
		if c.IsSet("allow-remote") && !hasFlag(c, "url") {
			return errors.New("--allow-remote: only with --agents N (the bundled target on this machine is on loopback)")
		}
		if c.IsSet("on-agent-loss") {
			cfg.OnAgentLoss = c.String("on-agent-loss")
		}
		return nil
	}
	if c.String("nats") != "" && c.String("listen") != "" {
		return errors.New("--listen and --nats: the embedded server listens, an existing one is given; not both")
	}
	if (c.String("tls-cert") == "") != (c.String("tls-key") == "") {
		return errors.New("--tls-cert and --tls-key: give both")
	}
	if l := c.String("listen"); hub.ClearListen(l, c.String("tls-cert") != "", c.Bool("insecure-listen")) != nil {
		return fmt.Errorf("--listen %s: beyond loopback without --tls-cert, agents' messages would cross the network in clear: add --tls-cert/--tls-key, or --insecure-listen to accept that", l)
	}
	if hasFlag(c, "allow-remote") {
		cfg.AllowRemote = c.StringSlice("allow-remote")
		if err := agent.ValidAllow(cfg.AllowRemote); err != nil {
			return fmt.Errorf("--allow-remote: %w", err)
		}
	}
	cfg.Agents = n
	cfg.AgentTimeout = c.Duration("agent-timeout")
	cfg.OnAgentLoss = c.String("on-agent-loss")
	cfg.Hub = hub.Config{
		Listen: c.String("listen"), InsecureListen: c.Bool("insecure-listen"), NATS: c.String("nats"), Creds: c.String("nats-creds"), TokenFile: c.String("token-file"),
		TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"), CA: c.String("ca"),
		JoinCommand: agentJoinCommand,
	}
	return nil
}

// agentJoinCommand is the `stampede agent` line that joins a run from
// another host, for the coordinator to print.
func agentJoinCommand(j hub.JoinHint) string {
	cmd := fmt.Sprintf("stampede agent --nats %s --token-file %s --name NAME --role loadgen|target|any", j.NATS, j.TokenFile)
	if j.Creds != "" {
		cmd += " --nats-creds " + j.Creds
	}
	if j.CA != "" {
		cmd += " --ca " + j.CA
	}
	return cmd
}
