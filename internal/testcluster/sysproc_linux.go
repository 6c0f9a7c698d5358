package testcluster

import (
	"os/exec"
	"syscall"
)

// componentProcAttr makes the kernel kill a component when the test process dies, however it
// dies, so that no control plane outlives its test.
//
// The signal is tied to the OS thread that started the child; the Go runtime only retires threads
// of goroutines that exit while locked to their thread, which this package never does.
func componentProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// detachedProcAttr puts a component in a session and process group of its own, which it leads,
// so that neither the end of the process that started it nor a hangup of its terminal stops it.
func detachedProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// scriptProcAttr puts the build script in its own process group, so that cancelling it reaches
// the go commands it runs, and sends it SIGTERM if the test process dies.
func scriptProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// terminateGroup sends SIGTERM to the process group led by cmd's process.
func terminateGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}
