//go:build !linux

package testcluster

import (
	"os/exec"
	"syscall"
)

// componentProcAttr returns nil: outside Linux there is no parent-death signal, and components
// outlive a test process that dies without calling Cluster.Stop.
func componentProcAttr() *syscall.SysProcAttr { return nil }

// detachedProcAttr returns nil: outside Linux a component always outlives the process that
// started it, in that process's group.
func detachedProcAttr() *syscall.SysProcAttr { return nil }

// scriptProcAttr returns nil: outside Linux the build script runs in the test's process group.
func scriptProcAttr() *syscall.SysProcAttr { return nil }

// terminateGroup kills the build script itself.
func terminateGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
