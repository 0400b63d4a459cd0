package redistest

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandStats reads INFO commandstats: calls per command, commands run
// inside scripts included. Benchmarks count a path's commands as the
// difference of two reads.
func CommandStats(tb testing.TB, c redis.UniversalClient) map[string]int64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		out[name] = n
	}
	return out
}
