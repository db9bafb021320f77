package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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

// sonames are the file names tried for l, newest CUDA first (CUDA 13, then 12).
func (l Library) sonames() []string {
	switch l {
	case CUBLAS:
		return []string{"libcublas.so.13", "libcublas.so.12"}
	case CUSOLVER:
		return []string{"libcusolver.so.12", "libcusolver.so.11"}
	case CUSPARSE:
		return []string{"libcusparse.so.12"}
	case NVRTC:
		return []string{"libnvrtc.so.13", "libnvrtc.so.12"}
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
func dlopen(what string, paths []string) (uintptr, string, error) {
	var reasons []string
	// dlerror's message is per thread: stay on one between dlopen and the
	// dlerror that purego calls after it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, p := range paths {
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
