package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stopWithGoRun returns a context that is also cancelled when the `go run`
// that started this process exits. go run ignores Ctrl-C (the terminal
// sends it to the whole process group, so this process drains on its own)
// but dies on SIGTERM or SIGKILL without passing them on, which would
// leave dev listening with nobody to stop it. On systems without /proc,
// or when the parent is not go run (a built binary, nohup, a supervisor),
// ctx comes back as it is.
func stopWithGoRun(ctx context.Context) context.Context {
	parent := os.Getppid()
	if !isGoRun(parent) {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// The parent's death reparents this process.
				if os.Getppid() != parent {
					slog.Info("go run exited; stopping", "go_run_pid", parent)
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}

// isGoRun reports whether process pid is `go run` (its command line's
// first two words are go and run).
func isGoRun(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := bytes.Split(cmdline, []byte{0})
	return len(args) >= 2 && filepath.Base(string(args[0])) == "go" && string(args[1]) == "run"
}

// goRunWords is the start of go run's command line up to the package it
// runs ("go", "run", ".", or "go", "run", "-race", "./cmd/x"), when
// process pid is go run; nil otherwise.
func goRunWords(pid int) []string {
	if !isGoRun(pid) {
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	words := []string{"go", "run"}
	for _, a := range args[2:] {
		words = append(words, a)
		if !strings.HasPrefix(a, "-") {
			return words // the package (or file) run
		}
	}
	return nil
}
