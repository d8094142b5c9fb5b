package remote

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts a stdio server in a process group of its own, so closing it also stops what it
// started (a server run through npx or a shell is a tree), and has the kernel kill it if the executor dies
// without closing it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills whatever is left of a stdio server's process group.
func killProcessGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
