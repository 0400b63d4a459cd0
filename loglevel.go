package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// logLevel is the level of every command's log (IMGFLOW_LOG_LEVEL,
// --log-level): debug, info (the default), warn or error. At debug the
// worker logs the start of each upstream call (msg=compressing, job_id).
var logLevel = new(slog.LevelVar)

// newLogger is the command's logger: text on stderr, at logLevel.
func newLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
}

// levelFlag sets logLevel from a name.
type levelFlag struct{}

func (levelFlag) String() string { return strings.ToLower(logLevel.Level().String()) }

func (levelFlag) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "debug":
		logLevel.Set(slog.LevelDebug)
	case "info", "":
		logLevel.Set(slog.LevelInfo)
	case "warn", "warning":
		logLevel.Set(slog.LevelWarn)
	case "error":
		logLevel.Set(slog.LevelError)
	default:
		return fmt.Errorf("%q is not a log level (debug, info, warn or error)", v)
	}
	return nil
}

// addLogLevelFlag gives fs --log-level with its twin IMGFLOW_LOG_LEVEL.
func (fs *flagSet) addLogLevelFlag() {
	if v, ok := os.LookupEnv("IMGFLOW_LOG_LEVEL"); ok {
		if err := (levelFlag{}).Set(v); err != nil {
			fs.errs = append(fs.errs, "IMGFLOW_LOG_LEVEL: "+err.Error())
		}
	}
	fs.Var(levelFlag{}, "log-level", envHelp("IMGFLOW_LOG_LEVEL", "log level: debug, info, warn or error"))
}
