package compresscli

import (
	"os/exec"
	"syscall"
)

// dieWithTests makes the kernel stop imgflow dev if the test binary dies
// without stopping it (a panic, a timeout), so no server outlives the run.
func dieWithTests(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
