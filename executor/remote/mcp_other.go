//go:build !linux

package remote

import "os/exec"

// setProcessGroup does nothing outside Linux: closing a stdio server stops the server's own process.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing outside Linux (see setProcessGroup).
func killProcessGroup(int) {}
