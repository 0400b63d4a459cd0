package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// A rolling upgrade: every serve and work process replaced one at a time,
// as a Deployment's rollout does: SIGTERM, wait for the process to exit
// (a worker finishes its running tasks or requeues them within its
// shutdown timeout), start the new one, wait until it serves, then the
// next. Under load nothing may be lost and nothing charged twice: a
// replaced process is not a crash, so no job may even be charge_uncertain.

// termGrace is how long a process may take to exit after SIGTERM: the
// worker's shutdown timeout (30 s) and a margin, as a pod's
// terminationGracePeriodSeconds would allow.
const termGrace = 60 * time.Second

// replaced is one process's replacement in a rolling upgrade.
type replaced struct {
	name    string
	stopped time.Duration // from SIGTERM to exit
	killed  bool          // it did not exit within termGrace
	ready   time.Duration // from start to serving
}

// terminate sends SIGTERM and waits up to grace for the exit, then
// SIGKILLs (killed true). It returns how long the exit took.
func (p *proc) terminate(grace time.Duration) (took time.Duration, killed bool) {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0, false
	}
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(grace):
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		p.kills = append(p.kills, p.logSize())
		killed = true
	}
	p.cmd = nil
	return time.Since(start), killed
}

// rollingUpgrade replaces serve, then each worker, one at a time.
func (s *system) rollingUpgrade(ctx context.Context) ([]replaced, error) {
	var out []replaced
	for _, p := range append([]*proc{s.serve}, s.workers...) {
		r := replaced{name: p.name}
		from := p.logSize()
		r.stopped, r.killed = p.terminate(termGrace)
		start := time.Now()
		if err := p.start(); err != nil {
			return out, err
		}
		var err error
		if p == s.serve {
			err = waitFor(ctx, func() bool { return get(s.api+"/health") == http.StatusOK })
		} else {
			err = waitFor(ctx, func() bool { return logged(p.path, from, "imgflow worker started") })
		}
		if err != nil {
			return out, fmt.Errorf("%s did not serve again after its replacement: %w", p.name, err)
		}
		r.ready = time.Since(start)
		fmt.Printf("faults: rolling upgrade: %s stopped in %s after SIGTERM (killed: %v), serving again in %s\n",
			p.name, r.stopped.Round(100*time.Millisecond), r.killed, r.ready.Round(100*time.Millisecond))
		out = append(out, r)
	}
	return out, nil
}

// logged reports whether path has a line containing text after offset
// from (a restarted process's log goes on in the same file).
func logged(path string, from int64, text string) bool {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < from {
		return false
	}
	return strings.Contains(string(data[from:]), text)
}
