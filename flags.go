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
	fs.addLogLevelFlag()
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

// List adds a repeatable flag whose values, and its environment twin's,
// may each be comma-separated lists (the caller splits them). The flag on
// the command line replaces the variable's value.
func (fs *flagSet) List(p *[]string, name, env, usage string) {
	if v, ok := os.LookupEnv(env); ok && env != "" && v != "" {
		*p = []string{v}
	}
	fs.Var(&listValue{p: p}, name, envHelp(env, usage))
}

type listValue struct {
	p   *[]string
	set bool // the first flag replaces the environment's value
}

func (l *listValue) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listValue) Set(v string) error {
	if !l.set {
		*l.p, l.set = nil, true
	}
	*l.p = append(*l.p, v)
	return nil
}

// Removed reports a variable that is no longer read when it is set to
// anything but false or empty, with what to use instead, so that a
// deployment relying on it stops with a reason instead of running with
// another meaning.
func (fs *flagSet) Removed(env, instead string) {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return
	}
	if b, err := strconv.ParseBool(v); err == nil && !b {
		return
	}
	fs.errs = append(fs.errs, fmt.Sprintf("%s is no longer supported: %s", env, instead))
}
