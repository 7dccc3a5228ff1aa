// Command stampede reproduces WebSocket reconnect storms with real sockets and
// measures whether a fleet survives them. Each subcommand lives in its own
// file and only turns flags into a library config; the work is in the
// library packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/internal/argvsecret"
)

// commands is filled by each subcommand file's init, so adding a subcommand
// touches one file.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

// newApp builds the application writing to stdout and stderr; subcommands
// print through c.App.Writer and c.App.ErrWriter so tests can capture them.
func newApp(stdout, stderr io.Writer) *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	for _, c := range commands {
		c.OnUsageError = usageError
		c.HelpName = "" // set by Run; a second app (tests) would prefix it again
		checkFinite(c)
		if slices.Contains(configCommands, c.Name) {
			withConfigFile(c)
		}
	}
	return &cli.App{
		Writer:    stdout,
		ErrWriter: stderr,
		Name:      "stampede",
		Usage:     "reproduce WebSocket reconnect storms with real sockets and measure recovery",
		Description: "A server restarts; every client drops at once; how they come back decides whether\n" +
			"the service recovers. stampede runs a fleet of real WebSocket clients with one shared\n" +
			"backoff policy against a target that restarts on a schedule, and measures time to\n" +
			"recover, the herd's arrival curve and message loss.",
		Commands:        commands,
		HideHelpCommand: true,
		// Repeatable flags take one value each: a policy spec or an SLO
		// contains commas.
		DisableSliceFlagSeparator: true,
		// Errors are printed once, by main, as one line.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		Action:         rootAction,
	}
}

// rootAction runs when no command matched: `stampede` and `stampede help
// [COMMAND]` print help (exit 0); anything else is an unknown command, a
// usage error (exit 2) in one line.
func rootAction(c *cli.Context) error {
	args := c.Args()
	switch {
	case !args.Present():
		return cli.ShowAppHelp(c)
	case args.First() == "help" && args.Len() == 1:
		return cli.ShowAppHelp(c)
	case args.First() == "help" && args.Len() == 2 && c.App.Command(args.Get(1)) != nil:
		return cli.ShowCommandHelp(c, args.Get(1))
	case args.First() == "help":
		return fmt.Errorf("help: unknown command %q (stampede --help lists the commands)", args.Get(1))
	}
	return fmt.Errorf("unknown command %q (stampede --help lists the commands)", args.First())
}

func main() {
	// os.Args holds '*' in place of the secrets typed on the command line
	// since argvsecret's init: the program parses the copy.
	os.Exit(runApp(argvsecret.Args, os.Stdout, os.Stderr))
}

// runApp executes the app and maps its error to an exit status: 0 on
// success, the status of a cli.ExitCoder, otherwise 2 for usage and run
// errors. The error is printed to stderr as one line, never a stack trace
// and never a secret of the command line or its config file (errorLine).
func runApp(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	resetSecrets()
	argSecrets(args)
	err := app.Run(flagsFirst(app, args))
	if err == nil {
		return 0
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, "stampede:", errorLine(err))
		}
		return ec.ExitCode()
	}
	fmt.Fprintln(stderr, "stampede:", errorLine(err))
	return 2
}
