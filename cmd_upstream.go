package main

import (
	"context"
	"errors"
)

// runUpstream runs the reference compression API. (Filled in by the upstream work.)
func runUpstream(ctx context.Context, args []string) error { return errors.New("not built yet") }
