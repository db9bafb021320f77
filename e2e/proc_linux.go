package e2e

import "syscall"

// sysProcAttr kills the children with the process that started them.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
