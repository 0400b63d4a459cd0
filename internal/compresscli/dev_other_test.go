//go:build !linux

package compresscli

import "os/exec"

func dieWithTests(*exec.Cmd) {}
