package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Library names one of the CUDA libraries that the package loads on first
// use, after the driver.
type Library int

const (
	// CUBLAS is cuBLAS (libcublas), used by Gemm and MatMul.
	CUBLAS Library = iota + 1
	// CUSOLVER is cuSOLVER's dense API (libcusolver).
	CUSOLVER
	// CUSPARSE is cuSPARSE (libcusparse).
	CUSPARSE
	// NVRTC is the runtime compiler (libnvrtc), used by LoadKernel and Launch.
	NVRTC
)

const numLibraries = int(NVRTC) + 1

// String returns the library's usual name, e.g. "cuBLAS".
func (l Library) String() string {
	switch l {
	case CUBLAS:
		return "cuBLAS"
	case CUSOLVER:
		return "cuSOLVER"
	case CUSPARSE:
		return "cuSPARSE"
	case NVRTC:
		return "NVRTC"
	}
	return fmt.Sprintf("library(%d)", int(l))
}

// envVar is the environment variable that overrides where l is loaded from.
func (l Library) envVar() string {
	switch l {
	case CUBLAS:
		return "RIOT_CUBLAS_LIBRARY"
	case CUSOLVER:
		return "RIOT_CUSOLVER_LIBRARY"
	case CUSPARSE:
		return "RIOT_CUSPARSE_LIBRARY"
	case NVRTC:
		return "RIOT_NVRTC_LIBRARY"
	}
	return ""
}

// sonames are the file names tried for l: those of CUDA 13 (libcublas.so.13,
// libcusolver.so.12, libcusparse.so.12, libnvrtc.so.13), then CUDA 12's
// (.12, .11, .12, .12). A CUDA 13 library needs a CUDA 13 driver, so a
// driver of CUDA 12 or older (driverMajor; 0 when unknown) gets the CUDA
// 12 names only.
func (l Library) sonames(driverMajor int) []string {
	var cuda13, cuda12 []string
	switch l {
	case CUBLAS:
		cuda13, cuda12 = []string{"libcublas.so.13"}, []string{"libcublas.so.12"}
	case CUSOLVER:
		cuda13, cuda12 = []string{"libcusolver.so.12"}, []string{"libcusolver.so.11"}
	case CUSPARSE:
		cuda12 = []string{"libcusparse.so.12"} // CUDA 13's is .12 too
	case NVRTC:
		cuda13, cuda12 = []string{"libnvrtc.so.13"}, []string{"libnvrtc.so.12"}
	}
	if driverMajor != 0 && driverMajor < 13 {
		return cuda12
	}
	return append(cuda13, cuda12...)
}

// depsOf returns the file name patterns (filepath.Match) of the CUDA
// libraries that the library file needs and that the dynamic loader looks
// for by name only: loading a library from a folder outside the loader's
// search path ($CUDA_HOME/lib64, a RIOT_*_LIBRARY path, Python's
// nvidia/cu13/lib) fails unless they are loaded first (see dlopen). NVRTC
// opens its builtins itself when it compiles. The versions follow the
// file's CUDA release: libcusolver.so.12 is CUDA 13's, .11 CUDA 12's; the
// libcusparse.so.12 of either release takes the driver's libnvJitLink.
func depsOf(file string, driverMajor int) []string {
	lib, ver, ok := strings.Cut(filepath.Base(file), ".so.")
	if !ok {
		return nil
	}
	cuda, _, _ := strings.Cut(ver, ".")
	switch lib {
	case "libcusolver":
		cuda = map[string]string{"11": "12", "12": "13"}[cuda]
	case "libcusparse":
		cuda = "*"
		if driverMajor >= 12 {
			cuda = strconv.Itoa(driverMajor)
		}
	}
	if cuda == "" {
		return nil
	}
	switch lib {
	case "libcublas":
		return []string{"libcublasLt.so." + cuda}
	case "libcusolver":
		return []string{"libnvJitLink.so." + cuda, "libcublasLt.so." + cuda, "libcublas.so." + cuda, "libcusparse.so.12"}
	case "libcusparse":
		return []string{"libnvJitLink.so." + cuda}
	case "libnvrtc":
		return []string{"libnvrtc-builtins.so." + cuda + ".*"}
	}
	return nil
}

// driverEnvVar overrides the path of the driver library.
const driverEnvVar = "RIOT_CUDA_LIBRARY"

// driverSoname is the driver library, found by the dynamic loader's search.
const driverSoname = "libcuda.so.1"

// candidates lists the paths tried for a library: each soname by the
// dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache), then in
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
func candidates(sonames []string, cudaHome string) []string {
	var dirs []string
	if cudaHome != "" {
		dirs = append(dirs, filepath.Join(cudaHome, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	var out []string
	for _, name := range sonames {
		out = append(out, name)
		for _, dir := range dirs {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// dlopen opens the first of paths that loads and returns its handle and
// path, or an error that lists every path tried with the loader's reason.
// Before it opens a path in a folder, it opens the files of that folder
// that match deps(path) (the shortest name of each pattern: the soname),
// so that the library's own dependencies are found there: the loader
// takes a library already loaded for any later need of its soname. deps
// may be nil.
func dlopen(what string, paths []string, deps func(path string) []string) (uintptr, string, error) {
	var reasons []string
	// dlerror's message is per thread: stay on one between dlopen and the
	// dlerror that purego calls after it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, p := range paths {
		if deps != nil && strings.Contains(p, "/") {
			preload(filepath.Dir(p), deps(p))
		}
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, p, nil
		}
		if strings.Contains(p, "/") {
			if _, serr := os.Stat(p); serr != nil && len(paths) > 1 {
				continue // a missing file in a search directory: not worth a line
			}
		}
		reasons = append(reasons, err.Error())
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "not found in "+strings.Join(paths, ", "))
	}
	return 0, "", fmt.Errorf("cannot load %s: %s", what, strings.Join(reasons, "; "))
}

// preload opens, in dir, the shortest file name matching each of
// patterns, and keeps it loaded; what is missing or fails to load is
// skipped (the library that needs it then says so).
func preload(dir string, patterns []string) {
	for _, pat := range patterns {
		matches, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil || len(matches) == 0 {
			continue
		}
		best := matches[0]
		for _, m := range matches[1:] {
			if len(m) < len(best) {
				best = m
			}
		}
		_, _ = purego.Dlopen(best, purego.RTLD_NOW|purego.RTLD_LOCAL)
	}
}

// symbol is one C function to bind: fptr points to a Go func variable of
// the C function's type. alts are other exported names of the same
// function, tried in order after name (e.g. without the _v2 suffix).
// optional symbols leave fptr nil when absent.
type symbol struct {
	fptr     any
	name     string
	alts     []string
	optional bool
}

// bind looks every symbol up in the library lib and registers it.
func bind(lib uintptr, what string, syms []symbol) error {
	for _, s := range syms {
		var addr uintptr
		for _, name := range append([]string{s.name}, s.alts...) {
			if a, err := purego.Dlsym(lib, name); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			if s.optional {
				continue
			}
			return fmt.Errorf("%s has no symbol %s", what, s.name)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
