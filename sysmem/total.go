package sysmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// ErrUnknown is wrapped by Total's error when this system's memory cannot
// be read.
var ErrUnknown = errors.New("sysmem: cannot tell how much memory this machine has")

// Total returns the bytes of memory this process may use: the machine's
// RAM (MemTotal in /proc/meminfo), or the memory limit of the process's
// cgroup (v2 memory.max, v1 memory.limit_in_bytes) where that is lower.
func Total() (uint64, error) {
	return total(os.DirFS("/"))
}

// total is Total on the file system root.
func total(root fs.FS) (uint64, error) {
	ram, err := memTotal(root)
	if err != nil {
		return 0, err
	}
	if lim, ok := cgroupLimit(root); ok && lim < ram {
		return lim, nil
	}
	return ram, nil
}

// memTotal reads MemTotal from proc/meminfo.
func memTotal(root fs.FS) (uint64, error) {
	b, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "MemTotal:" {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || len(f) != 3 || f[2] != "kB" {
			return 0, fmt.Errorf("%w: /proc/meminfo: MemTotal line %q", ErrUnknown, sc.Text())
		}
		return n * 1024, nil
	}
	return 0, fmt.Errorf("%w: /proc/meminfo has no MemTotal line", ErrUnknown)
}

// cgroupLimit returns the memory limit of the process's cgroup, and false
// when it has none or it cannot be read. In a container the cgroup
// namespace makes the process's own group the root of /sys/fs/cgroup, so
// the group's path is tried first under the mount and then the mount's
// root.
func cgroupLimit(root fs.FS) (uint64, bool) {
	b, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	var v2, v1 string
	haveV2, haveV1 := false, false
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, haveV2 = parts[2], true
		case hasController(parts[1], "memory"):
			v1, haveV1 = parts[2], true
		}
	}
	var files []string
	if haveV1 {
		files = append(files, path.Join("sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"), "sys/fs/cgroup/memory/memory.limit_in_bytes")
	}
	if haveV2 {
		files = append(files, path.Join("sys/fs/cgroup", v2, "memory.max"), "sys/fs/cgroup/memory.max")
	}
	for _, f := range files {
		b, err := fs.ReadFile(root, f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return 0, false
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			continue
		}
		// cgroup v1 writes "no limit" as the largest page-aligned int64.
		if n >= 1<<62 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
