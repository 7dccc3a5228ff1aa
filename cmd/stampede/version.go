package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "version",
		Usage: "print the version, the commit it was built from and the Go version",
		Description: "Prints three lines: the module version (\"(devel)\" for a build from a source tree), the\n" +
			"commit (with \"+modified\" when the tree had uncommitted changes; \"unknown\" when the build\n" +
			"recorded none, as with -buildvcs=false; for `go install ...@VERSION` of a commit, the commit\n" +
			"prefix its pseudo-version names) and the Go toolchain.",
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
	if commit == "unknown" {
		if rev, ok := pseudoRevision(version); ok {
			commit = rev
		}
	}
	if modified {
		commit += "+modified"
	}
	fmt.Fprintf(w, "stampede %s\ncommit %s\ngo %s\n", version, commit, runtime.Version())
}

// pseudoRevision returns the commit prefix a pseudo-version names
// (v0.0.0-20260101000000-0123456789ab: 0123456789ab): a module built by
// `go install MODULE@VERSION` carries no VCS stamp, only its version.
func pseudoRevision(version string) (string, bool) {
	version, _, _ = strings.Cut(version, "+")
	i := strings.LastIndexByte(version, '-')
	if i < 0 || strings.Count(version, "-") < 2 {
		return "", false
	}
	rev := version[i+1:]
	if len(rev) != 12 || strings.Trim(rev, "0123456789abcdef") != "" {
		return "", false
	}
	return rev, true
}
