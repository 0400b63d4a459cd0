// Package version is imgflow's one version: the VERSION file beside this
// one, embedded at build time. `imgflow version`, the MCP server's info,
// server.json and the Helm chart's appVersion all name it (a test in this
// package fails when server.json or the chart disagree).
package version

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var file string

// String is the version, e.g. "0.2.0".
func String() string { return strings.TrimSpace(file) }
