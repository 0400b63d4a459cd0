package main

import (
	"context"
	"errors"
)

// runDefinitions writes the connector definitions. (Filled in by the definitions work.)
func runDefinitions(ctx context.Context, args []string) error { return errors.New("not built yet") }
