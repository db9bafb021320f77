//go:build !linux

package e2e

import "syscall"

// sysProcAttr: no parent-death signal outside Linux; Close the processes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
