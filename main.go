// Command imgflow puts an image compression API into automation flows
// (Zapier, n8n, Make, Power Automate, plain webhooks). It wires the packages
// together: each subcommand lives in a cmd_*.go file of its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// command is one subcommand: its one-line summary and what it runs.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"dev":         {"everything in one process: embedded Redis, reference upstream, API and worker", runDev},
	"serve":       {"the HTTP API only", runServe},
	"work":        {"the asynq worker only", runWork},
	"upstream":    {"the reference compression API only (base path /api)", runUpstream},
	"keys":        {"manage reference-upstream accounts: create | topup | show", runKeys},
	"migrate":     {"migrate the key layout in Redis to this version's (the schema version)", runMigrate},
	"definitions": {"write every platform's connector definition files", runDefinitions},
	"compress":    {"compress image files and folders through an imgflow API, as batches", runCompress},
	"version":     {"print the version, the commit and the Go version", runVersion},
}

var commandOrder = []string{"dev", "serve", "work", "migrate", "upstream", "keys", "definitions", "compress", "version"}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: imgflow <command> [flags]\n\ncommands:")
	for _, name := range commandOrder {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'imgflow <command> --help' for its flags and their environment variables.")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
			usage()
			return
		}
		fmt.Fprintf(os.Stderr, "imgflow: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	slog.SetDefault(newLogger())
	// SIGTERM and Ctrl-C cancel ctx: servers drain, workers finish or requeue.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := startCPUProfile(os.Getenv("IMGFLOW_CPU_PROFILE"))
	err := cmd.run(ctx, os.Args[2:])
	stopProfile()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "imgflow "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

// startCPUProfile writes a CPU profile of the whole command to path (the
// IMGFLOW_CPU_PROFILE environment variable, for diagnosis and
// internal/loadtest) until the returned function runs; "" profiles nothing.
func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		slog.Error("IMGFLOW_CPU_PROFILE: no profile", "err", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
