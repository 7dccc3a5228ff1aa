package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "version",
		Usage: "print the version, the commit it was built from and the Go version",
		Description: "Prints three lines: the module version (\"(devel)\" for a build from a source tree), the\n" +
			"commit (with \"+modified\" when the tree had uncommitted changes; \"unknown\" when the build\n" +
			"recorded none, as with -buildvcs=false) and the Go toolchain.",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("version: unexpected argument %q", c.Args().First())
			}
			bi, _ := debug.ReadBuildInfo()
			writeVersion(c.App.Writer, bi)
			return nil
		},
	})
}

// writeVersion prints what bi says of this binary; nil (a binary without
// build information) prints what it can.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	version, commit, modified := "unknown", "unknown", false
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		commit += "+modified"
	}
	fmt.Fprintf(w, "stampede %s\ncommit %s\ngo %s\n", version, commit, runtime.Version())
}
