package gpu

import (
	"fmt"
	"sync"
	"unsafe"
)

// libStatus is the status enum every CUDA library returns (a C int).
type libStatus int32

// blasAPI holds the cuBLAS entry points. cublas_v2.h maps the plain names
// to the _v2 exports, which are bound (with the plain names as fallback
// for the handle functions, whose legacy and v2 signatures agree).
// Device pointers are uint64; alpha and beta are host pointers (the
// handle's default pointer mode).
type blasAPI struct {
	create    func(handle *uintptr) libStatus
	destroy   func(handle uintptr) libStatus
	setStream func(handle uintptr, stream uintptr) libStatus
	sgemm     func(handle uintptr, transA, transB int32, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) libStatus
	dgemm     func(handle uintptr, transA, transB int32, m, n, k int32, alpha *float64, a uint64, lda int32, b uint64, ldb int32, beta *float64, c uint64, ldc int32) libStatus
	// gemmEx is cublasGemmEx: A, B and C with their cudaDataType_t, a
	// cublasComputeType_t and an algorithm. Optional (cuBLAS 11+).
	gemmEx func(handle uintptr, transA, transB int32, m, n, k int32, alpha unsafe.Pointer,
		a uint64, atype int32, lda int32, b uint64, btype int32, ldb int32,
		beta unsafe.Pointer, c uint64, ctype int32, ldc int32, compute int32, algo int32) libStatus
}

func (a *blasAPI) symbols() []symbol {
	return []symbol{
		{fptr: &a.create, name: "cublasCreate_v2", alts: []string{"cublasCreate"}},
		{fptr: &a.destroy, name: "cublasDestroy_v2", alts: []string{"cublasDestroy"}},
		{fptr: &a.setStream, name: "cublasSetStream_v2", alts: []string{"cublasSetStream"}},
		// No fallback to the plain names: libcublas exports them too, as
		// the legacy API's functions, which take alpha and beta by value.
		{fptr: &a.sgemm, name: "cublasSgemm_v2"},
		{fptr: &a.dgemm, name: "cublasDgemm_v2"},
		{fptr: &a.gemmEx, name: "cublasGemmEx", optional: true},
	}
}

// handleAPI holds the create, destroy and set-stream entry points of a
// library whose only use here is a handle bound to a stream (cuSOLVER's
// dense API and cuSPARSE, until operations use them).
type handleAPI struct {
	create    func(handle *uintptr) libStatus
	destroy   func(handle uintptr) libStatus
	setStream func(handle uintptr, stream uintptr) libStatus
}

func (a *handleAPI) symbols(prefix string) []symbol {
	return []symbol{
		{fptr: &a.create, name: prefix + "Create"},
		{fptr: &a.destroy, name: prefix + "Destroy"},
		{fptr: &a.setStream, name: prefix + "SetStream"},
	}
}

// nvrtcAPI holds the NVRTC entry points. Programs are uintptr; string
// arrays are passed as unsafe.Pointer to pinned arrays of C strings.
type nvrtcAPI struct {
	createProgram  func(prog *uintptr, src string, name string, numHeaders int32, headers unsafe.Pointer, includeNames unsafe.Pointer) libStatus
	compileProgram func(prog uintptr, numOptions int32, options unsafe.Pointer) libStatus
	getPTXSize     func(prog uintptr, size *uintptr) libStatus
	getPTX         func(prog uintptr, ptx *byte) libStatus
	getCUBINSize   func(prog uintptr, size *uintptr) libStatus // optional (CUDA 11.1+)
	getCUBIN       func(prog uintptr, cubin *byte) libStatus   // optional (CUDA 11.1+)
	getLogSize     func(prog uintptr, size *uintptr) libStatus
	getLog         func(prog uintptr, log *byte) libStatus
	destroyProgram func(prog *uintptr) libStatus
	getErrorString func(r libStatus) *byte
}

// hasCUBIN reports whether NVRTC can give machine code (a cubin) rather
// than only PTX.
func (a *nvrtcAPI) hasCUBIN() bool { return a.getCUBINSize != nil && a.getCUBIN != nil }

func (a *nvrtcAPI) symbols() []symbol {
	return []symbol{
		{fptr: &a.createProgram, name: "nvrtcCreateProgram"},
		{fptr: &a.compileProgram, name: "nvrtcCompileProgram"},
		{fptr: &a.getPTXSize, name: "nvrtcGetPTXSize"},
		{fptr: &a.getPTX, name: "nvrtcGetPTX"},
		{fptr: &a.getCUBINSize, name: "nvrtcGetCUBINSize", optional: true},
		{fptr: &a.getCUBIN, name: "nvrtcGetCUBIN", optional: true},
		{fptr: &a.getLogSize, name: "nvrtcGetProgramLogSize"},
		{fptr: &a.getLog, name: "nvrtcGetProgramLog"},
		{fptr: &a.destroyProgram, name: "nvrtcDestroyProgram"},
		{fptr: &a.getErrorString, name: "nvrtcGetErrorString"},
	}
}

// libSet is the lazily loaded libraries of one Driver. Each is loaded at
// most once; a failure is kept and returned to every later use, since the
// files a process can load do not change under it. The entry points are
// written under mu by load and only read after a load that returned nil.
type libSet struct {
	mu     sync.Mutex
	done   [numLibraries]bool
	err    [numLibraries]error
	path   [numLibraries]string
	blas   blasAPI
	solver handleAPI
	sparse handleAPI
	nvrtc  nvrtcAPI
}

// load loads lib, once, from override if it is set, else by the standard
// search, for a driver of CUDA major version driverMajor (0: unknown). The
// error is a Logic error that names the library and every path tried.
func (s *libSet) load(lib Library, override, cudaHome string, driverMajor int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done[lib] {
		s.done[lib] = true
		s.err[lib] = s.loadLocked(lib, override, cudaHome, driverMajor)
	}
	return s.err[lib]
}

// loadedPath returns the path lib was loaded from, or "".
func (s *libSet) loadedPath(lib Library) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path[lib]
}

func (s *libSet) loadLocked(lib Library, override, cudaHome string, driverMajor int) error {
	paths := candidates(lib.sonames(driverMajor), cudaHome)
	if override != "" {
		paths = []string{override}
	}
	h, path, err := dlopen(lib.String(), paths, func(p string) []string { return depsOf(p, driverMajor) })
	if err != nil {
		return fmt.Errorf("%w (set %s to its path)", err, lib.envVar())
	}
	var syms []symbol
	switch lib {
	case CUBLAS:
		syms = s.blas.symbols()
	case CUSOLVER:
		syms = s.solver.symbols("cusolverDn")
	case CUSPARSE:
		syms = s.sparse.symbols("cusparse")
	case NVRTC:
		syms = s.nvrtc.symbols()
	}
	if err := bind(h, lib.String()+" ("+path+")", syms); err != nil {
		return err
	}
	s.path[lib] = path
	return nil
}

// handleAPI returns the handle entry points of a handle library.
func (s *libSet) handleAPI(lib Library) *handleAPI {
	switch lib {
	case CUBLAS:
		return &handleAPI{create: s.blas.create, destroy: s.blas.destroy, setStream: s.blas.setStream}
	case CUSOLVER:
		return &s.solver
	case CUSPARSE:
		return &s.sparse
	}
	return nil
}

// libCheck turns a library status of the C function fn into an error: nil
// for success (0), else a *statusError; allocation failures are marked as
// out of memory.
func libCheck(lib Library, fn string, st libStatus) error {
	if st == 0 {
		return nil
	}
	code := int(st)
	e := &statusError{fn: fn, code: code}
	switch lib {
	case CUBLAS:
		e.name, e.oom = cublasStatusName(code), code == cublasStatusAllocFailed
	case CUSOLVER:
		e.name, e.oom = cusolverStatusName(code), code == cusolverStatusAllocFailed
	case CUSPARSE:
		e.name, e.oom = cusparseStatusName(code), code == cusparseStatusAllocFailed
	default:
		e.name = fmt.Sprintf("%s status %d", lib, code)
	}
	return e
}

// nvrtcCheck is libCheck for NVRTC, whose names come from
// nvrtcGetErrorString.
func (a *nvrtcAPI) check(fn string, r libStatus) error {
	if r == 0 {
		return nil
	}
	name := fmt.Sprintf("NVRTC_ERROR_%d", int(r))
	if p := a.getErrorString(r); p != nil {
		name = goString(p)
	}
	return &statusError{fn: fn, code: int(r), name: name, oom: r == nvrtcErrorOutOfMemory}
}
