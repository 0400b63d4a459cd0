package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// flagSet is a flag.FlagSet whose flags each have an environment twin: the
// variable's value is the default, a flag on the command line wins, and
// --help lists both.
type flagSet struct {
	*flag.FlagSet
	errs []string
}

func newFlagSet(name, summary string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: imgflow %s [flags]\n\n%s\n\nflags (each with its environment variable):\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

func envHelp(env, usage string) string {
	if env == "" {
		return usage
	}
	return usage + " [$" + env + "]"
}

func (fs *flagSet) String(p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		def = v
	}
	fs.StringVar(p, name, def, envHelp(env, usage))
}

func (fs *flagSet) Bool(p *bool, name, env string, def bool, usage string) {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fs.errs = append(fs.errs, fmt.Sprintf("%s=%q is not a boolean (true or false)", env, v))
		}
		def = b
	}
	fs.BoolVar(p, name, def, envHelp(env, usage))
}

func (fs *flagSet) Int(p *int, name, env string, def int, usage string) {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fs.errs = append(fs.errs, fmt.Sprintf("%s=%q is not a whole number", env, v))
		}
		def = n
	}
	fs.IntVar(p, name, def, envHelp(env, usage))
}

func (fs *flagSet) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok && env != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fs.errs = append(fs.errs, fmt.Sprintf("%s=%q is not a duration (like 24h or 90s)", env, v))
		}
		def = d
	}
	fs.DurationVar(p, name, def, envHelp(env, usage))
}

// parse parses args and reports bad environment values by variable name.
func (fs *flagSet) parse(args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(fs.errs) > 0 {
		return fmt.Errorf("bad configuration: %s", strings.Join(fs.errs, "; "))
	}
	return nil
}
