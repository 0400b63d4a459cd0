package main

import (
	"context"
	"errors"
)

func runServe(ctx context.Context, args []string) error { return errors.New("not built yet") }
func runWork(ctx context.Context, args []string) error  { return errors.New("not built yet") }
func runDev(ctx context.Context, args []string) error   { return errors.New("not built yet") }
