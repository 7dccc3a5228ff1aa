package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/cluster/hub"
	"github.com/stampede-dev/stampede/loadgen"
)

// agentNameEnv gives an agent its name when --name is not set (a
// Kubernetes Indexed Job sets it from the completion index).
const agentNameEnv = "STAMPEDE_AGENT_NAME"

func init() {
	register(&cli.Command{
		Name:  "agent",
		Usage: "join a run from this host (--nats), or run one role of a local run (no flags: a plan on stdin, messages on stdout)",
		UsageText: "stampede agent --nats URL --token-file FILE --name NAME --role loadgen|target|any [--capacity CLIENTS]\n" +
			"   [--nats-creds FILE] [--tls-cert F --tls-key F --ca F]",
		Description: "With --nats, the agent joins the run whose coordinator (stampede run --agents N) prints the\n" +
			"join command: it presents the run's token (the coordinator's --token-file, copied here), estimates\n" +
			"its clock offset to the coordinator, and runs what is placed on it: the target group (role target\n" +
			"or any) or loadgen shares (role loadgen or any; --capacity says how many clients it takes, and\n" +
			"shares are split in proportion). It stops its load by itself within 5 s when the coordinator goes\n" +
			"silent, and exits when the run is over. See docs/fleet.md.\n\n" +
			"Example: stampede agent --nats nats://10.0.0.1:4250 --token-file token --name lg-1 --role loadgen --capacity 40000\n\n" +
			"Without --nats it is the agent a local run starts (docs/agent.md).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nats", Usage: "join the run at the NATS server `URL` (the coordinator prints it)"},
			&cli.StringFlag{Name: "token-file", Usage: "the run's token, in `FILE` (the coordinator's --token-file)"},
			&cli.StringFlag{Name: "name", EnvVars: []string{agentNameEnv}, Usage: "this agent's `NAME` in the run (unique; default $" + agentNameEnv + ", else the host name)"},
			&cli.StringFlag{Name: "role", Value: hub.RoleAny, Usage: "what this agent may run: `ROLE` loadgen, target or any"},
			&cli.IntFlag{Name: "capacity", Usage: "clients `N` this agent takes at most (0 = not declared: an equal share)"},
			&cli.StringFlag{Name: "source-ips", Usage: "this host's source addresses `LIST` for its clients, e.g. 10.203.0.11,10.203.0.15 (about 20,000 clients each towards one target)"},
			&cli.StringFlag{Name: "nats-creds", Usage: "credentials `FILE` of an existing NATS server (else a credential derived from the token is presented to the server)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "this agent's TLS certificate `FILE` (mutual TLS)"},
			&cli.StringFlag{Name: "tls-key", Usage: "the key `FILE` of --tls-cert"},
			&cli.StringFlag{Name: "ca", Usage: "the certificate authority `FILE` that signed the NATS server's certificate"},
			&cli.StringSliceFlag{Name: "allow-remote", Usage: "allow load to `HOST` or address prefix (10.244.0.0/16) beyond loopback and the namespace hosts 10.203.0.0/16: a plan sending load elsewhere is refused, whatever the coordinator allows (repeatable)"},
			&cli.DurationFlag{Name: "join-timeout", Value: hub.DefaultJoinTimeout, Usage: "give up when no coordinator takes this agent within `D`"},
		},
		Action: agentAction,
	})
}

func agentAction(c *cli.Context) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.NArg() > 0 {
		return fmt.Errorf("agent: unexpected argument %q", c.Args().First())
	}
	if c.String("nats") == "" {
		for _, f := range []string{"token-file", "capacity", "source-ips", "nats-creds", "tls-cert", "tls-key", "ca", "allow-remote"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s: only with --nats", f)
			}
		}
		if c.IsSet("role") {
			return errors.New("--role: only with --nats")
		}
		return agent.ServeStdio(ctx, os.Stdin, os.Stdout, agent.AgentConfig{})
	}
	jc, allow, err := joinConfig(c)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(c.App.ErrWriter, "%s stampede agent %s: %s\n", time.Now().UTC().Format("15:04:05.000"), jc.Name, fmt.Sprintf(format, args...))
	}
	jc.Log = logf
	j, err := hub.Join(ctx, jc)
	if err != nil {
		var re *hub.RefusedError
		if errors.As(err, &re) {
			return cli.Exit("agent refused: "+re.Why, 1)
		}
		return flagError(err)
	}
	roles := &agent.Roles{
		Logs:  c.App.ErrWriter,
		Agent: agent.AgentConfig{Host: j.Addr},
		Allow: allow,
	}
	if err := roles.ServeAll(ctx, j.Serve); err != nil {
		if pe := (*agent.PlanLoadError)(nil); errors.As(err, &pe) {
			return cli.Exit("agent refused the plan: "+hub.Printable(pe.Error()), 1)
		}
		logf("%v", err)
		return cli.Exit("", 1)
	}
	logf("the run is over")
	return nil
}

// joinConfig reads the flags of an agent that joins over NATS: how it
// joins, and its own allow list.
func joinConfig(c *cli.Context) (hub.JoinConfig, []string, error) {
	var jc hub.JoinConfig
	if c.String("token-file") == "" {
		return jc, nil, errors.New("--token-file: required with --nats (the coordinator's token file)")
	}
	if (c.String("tls-cert") == "") != (c.String("tls-key") == "") {
		return jc, nil, errors.New("--tls-cert and --tls-key: give both")
	}
	var sources []netip.Addr
	if s := c.String("source-ips"); s != "" {
		var err error
		if sources, err = loadgen.ParseSourceIPs(s); err != nil {
			return jc, nil, fmt.Errorf("--source-ips: %w", err)
		}
		if err := loadgen.CheckLocalSources(sources); err != nil {
			return jc, nil, flagError(err)
		}
	}
	allow := c.StringSlice("allow-remote")
	if err := agent.ValidAllow(allow); err != nil {
		return jc, nil, fmt.Errorf("--allow-remote: %w", err)
	}
	token, err := hub.ReadToken(c.String("token-file"))
	if err != nil {
		return jc, nil, err
	}
	name := c.String("name")
	if name == "" {
		name, _ = os.Hostname()
	}
	return hub.JoinConfig{
		NATS: c.String("nats"), Creds: c.String("nats-creds"), Token: token,
		TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"), CA: c.String("ca"),
		Name: name, Role: c.String("role"), Capacity: c.Int("capacity"), SourceIPs: sources,
		JoinTimeout: c.Duration("join-timeout"),
	}, allow, nil
}
