package gpu

import (
	"errors"
	"fmt"
)

// ErrUnavailable means that the CUDA driver library could not be loaded or
// initialized, so the host has no usable devices. Open wraps it with the
// reason (the dlopen message, a missing symbol, or the error of cuInit).
var ErrUnavailable = errors.New("gpu: cuda unavailable")

// Kind tells a full GPU from a bad call. It is the kind of a RaftError in
// JavaScript and of exn:fail:raft in the seed.
type Kind int

const (
	// Logic is every failure that is not a lack of memory: a missing device,
	// a closed object, a bad argument, a failed kernel, a missing library.
	Logic Kind = iota
	// OutOfMemory is CUDA_ERROR_OUT_OF_MEMORY and the libraries' allocation
	// failures (CUBLAS_STATUS_ALLOC_FAILED, CUSOLVER_STATUS_ALLOC_FAILED,
	// CUSPARSE_STATUS_ALLOC_FAILED, NVRTC_ERROR_OUT_OF_MEMORY).
	OutOfMemory
)

// String returns the kind as the seed and the JavaScript bindings spell it:
// "logic" or "out-of-memory".
func (k Kind) String() string {
	switch k {
	case Logic:
		return "logic"
	case OutOfMemory:
		return "out-of-memory"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// The operations that name an *Error, spelled as the JavaScript procedures
// that the bindings expose (engine/jsgpu), so that a message reads
// like the seed's: "deviceResources: no device 4 among 1".
const (
	OpDeviceInfo          = "deviceInfo"          // (*Driver).Device
	OpDeviceResources     = "deviceResources"     // (*Driver).NewResources
	OpResourcesDevice     = "resourcesDevice"     // (*Resources).Device never fails; named for completeness
	OpResourcesSync       = "resourcesSync"       // (*Resources).Sync
	OpResourcesClose      = "resourcesClose"      // (*Resources).Close
	OpResourcesHandle     = "resourcesHandle"     // (*Resources).LibraryHandle
	OpWithDeviceResources = "withDeviceResources" // WithResources
	OpDeviceArray         = "deviceArray"         // NewArray, (*Resources).Zeros
	OpArrayToHost         = "arrayToHost"         // CopyToHost
	OpArrayFromHost       = "arrayFromHost"       // CopyFromHost
	OpArrayFree           = "arrayFree"           // (*Array).Free
	OpGemm                = "gemm"                // (*Resources).Gemm
	OpMatMul              = "matMul"              // (*Resources).MatMul
	OpCompileKernel       = "compileKernel"       // (*Resources).LoadKernel
	OpLaunchKernel        = "launchKernel"        // (*Resources).Launch
)

// Error is the one error type of the package's operations. Op is the
// procedure the caller called, in its JavaScript spelling (the Op
// constants); Kind tells OutOfMemory from Logic; Code is the status that the
// failing CUDA or library call returned (a CUresult, cublasStatus_t,
// cusolverStatus_t, cusparseStatus_t or nvrtcResult), or 0 when the error did
// not come from such a call. Err says what went wrong; for a CUDA call it
// names the function, the status name and its description.
//
// Use errors.As to get at it:
//
//	var ge *gpu.Error
//	if errors.As(err, &ge) && ge.Kind == gpu.OutOfMemory { ... }
type Error struct {
	Op   string
	Kind Kind
	Code int
	Err  error
}

// Error returns "<op>: <what went wrong>", for example
// "deviceResources: no device 4 among 1".
func (e *Error) Error() string {
	if e.Err == nil {
		return e.Op + ": " + e.Kind.String() + " error"
	}
	return e.Op + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// opError wraps err as an *Error of operation op. The kind and code come
// from the first *statusError in err's chain; anything else is Logic with
// code 0. An err that is an *Error keeps its kind and code and gets op as
// its operation, so a message always names the procedure the caller
// called.
func opError(op string, err error) error {
	if err == nil {
		return nil
	}
	if ge, ok := err.(*Error); ok {
		if ge.Op == op {
			return ge
		}
		return &Error{Op: op, Kind: ge.Kind, Code: ge.Code, Err: ge.Err}
	}
	e := &Error{Op: op, Kind: Logic, Err: err}
	var se *statusError
	if errors.As(err, &se) {
		e.Code = se.code
		if se.oom {
			e.Kind = OutOfMemory
		}
	}
	return e
}

// opErrorf is opError of a formatted Logic error.
func opErrorf(op, format string, args ...any) error {
	return opError(op, fmt.Errorf(format, args...))
}

// statusError is a failed call into CUDA or one of its libraries.
type statusError struct {
	fn   string // the C function, e.g. "cuMemAlloc_v2"
	code int
	name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	desc string // e.g. "out of memory"; may be empty
	oom  bool
	log  string // NVRTC's program log, when there is one
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.fn, e.name, e.code)
	if e.desc != "" && e.desc != e.name {
		s += ": " + e.desc
	}
	if e.log != "" {
		s += "\n" + e.log
	}
	return s
}

// CUDA driver results the package treats specially.
const (
	cudaSuccess       = 0
	cudaErrorOOM      = 2
	cudaErrorNoDevice = 100
	cudaErrorNotReady = 600
)

// cublasStatusName names a cublasStatus_t.
func cublasStatusName(code int) string {
	switch code {
	case 0:
		return "CUBLAS_STATUS_SUCCESS"
	case 1:
		return "CUBLAS_STATUS_NOT_INITIALIZED"
	case 3:
		return "CUBLAS_STATUS_ALLOC_FAILED"
	case 7:
		return "CUBLAS_STATUS_INVALID_VALUE"
	case 8:
		return "CUBLAS_STATUS_ARCH_MISMATCH"
	case 11:
		return "CUBLAS_STATUS_MAPPING_ERROR"
	case 13:
		return "CUBLAS_STATUS_EXECUTION_FAILED"
	case 14:
		return "CUBLAS_STATUS_INTERNAL_ERROR"
	case 15:
		return "CUBLAS_STATUS_NOT_SUPPORTED"
	case 16:
		return "CUBLAS_STATUS_LICENSE_ERROR"
	}
	return fmt.Sprintf("CUBLAS_STATUS_%d", code)
}

// cusolverStatusName names a cusolverStatus_t.
func cusolverStatusName(code int) string {
	switch code {
	case 0:
		return "CUSOLVER_STATUS_SUCCESS"
	case 1:
		return "CUSOLVER_STATUS_NOT_INITIALIZED"
	case 2:
		return "CUSOLVER_STATUS_ALLOC_FAILED"
	case 3:
		return "CUSOLVER_STATUS_INVALID_VALUE"
	case 4:
		return "CUSOLVER_STATUS_ARCH_MISMATCH"
	case 5:
		return "CUSOLVER_STATUS_MAPPING_ERROR"
	case 6:
		return "CUSOLVER_STATUS_EXECUTION_FAILED"
	case 7:
		return "CUSOLVER_STATUS_INTERNAL_ERROR"
	case 8:
		return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED"
	case 9:
		return "CUSOLVER_STATUS_NOT_SUPPORTED"
	}
	return fmt.Sprintf("CUSOLVER_STATUS_%d", code)
}

// cusparseStatusName names a cusparseStatus_t.
func cusparseStatusName(code int) string {
	switch code {
	case 0:
		return "CUSPARSE_STATUS_SUCCESS"
	case 1:
		return "CUSPARSE_STATUS_NOT_INITIALIZED"
	case 2:
		return "CUSPARSE_STATUS_ALLOC_FAILED"
	case 3:
		return "CUSPARSE_STATUS_INVALID_VALUE"
	case 4:
		return "CUSPARSE_STATUS_ARCH_MISMATCH"
	case 5:
		return "CUSPARSE_STATUS_MAPPING_ERROR"
	case 6:
		return "CUSPARSE_STATUS_EXECUTION_FAILED"
	case 7:
		return "CUSPARSE_STATUS_INTERNAL_ERROR"
	case 8:
		return "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED"
	case 9:
		return "CUSPARSE_STATUS_ZERO_PIVOT"
	case 10:
		return "CUSPARSE_STATUS_NOT_SUPPORTED"
	case 11:
		return "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES"
	}
	return fmt.Sprintf("CUSPARSE_STATUS_%d", code)
}

// Allocation-failure statuses of the libraries.
const (
	cublasStatusAllocFailed   = 3
	cusolverStatusAllocFailed = 2
	cusparseStatusAllocFailed = 2
	nvrtcErrorOutOfMemory     = 1
)

// nvrtcErrorInvalidOption is NVRTC's answer to an option it does not know,
// such as an architecture newer than itself.
const nvrtcErrorInvalidOption = 5
