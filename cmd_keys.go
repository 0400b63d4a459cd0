package main

import (
	"context"
	"errors"
)

// runKeys manages reference-upstream accounts. (Filled in by the upstream work.)
func runKeys(ctx context.Context, args []string) error { return errors.New("not built yet") }
