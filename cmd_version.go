package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/imgflow/imgflow/internal/version"
)

// commit is the source revision, set at build time with
// -ldflags "-X main.commit=..." (the Dockerfile does); otherwise it is read
// from the build's VCS stamp, which `go build` and `go install` add in a
// git checkout.
var commit = ""

// runVersion prints `imgflow <version> (<commit>, <go version>)`; the
// version is internal/version's, the one server.json and the chart name.
func runVersion(_ context.Context, args []string) error {
	fs := newFlagSet("version", "Prints the version, the commit it was built from and the Go version.")
	if err := fs.parse(args); err != nil {
		return err
	}
	printVersion(os.Stdout)
	return nil
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "imgflow %s (%s, %s)\n", version.String(), buildCommit(), runtime.Version())
}

// buildCommit is main.commit, else the VCS stamp's revision (12 digits,
// "-dirty" with uncommitted changes), else "unknown commit" (`go run` and
// builds outside a checkout stamp none).
func buildCommit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown commit"
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown commit"
	}
	rev = rev[:min(12, len(rev))]
	if dirty {
		rev += "-dirty"
	}
	return rev
}
