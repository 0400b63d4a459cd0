package connector

import "time"

// Defaults that more than one process applies (serve, work and the
// creation service): each is written here once.
const (
	// DefaultResultTTL is how long a compressed file and its links live,
	// and how long an input whose job never runs is kept
	// (IMGFLOW_RESULT_TTL).
	DefaultResultTTL = 24 * time.Hour
	// DefaultMaxWait caps how long a request waits for its result (?wait,
	// the MCP tools' wait_seconds): under the 30 s Zapier gives an action.
	DefaultMaxWait = 25 * time.Second
)
