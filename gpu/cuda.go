package gpu

import (
	"fmt"
	"unsafe"
)

// cuResult is a CUresult.
type cuResult int32

// Device attributes and flags from cuda.h.
const (
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrMemoryPoolsSupported   = 115
	streamNonBlocking          = 0x1
	eventDisableTiming         = 0x2 // CU_EVENT_DISABLE_TIMING: the cheapest event to record and query
)

// cudaAPI holds the driver entry points the package calls, bound with
// purego from libcuda.so.1. Several are exported under a versioned name
// (cuMemAlloc_v2, ...) that cuda.h maps the plain name to; those are the
// ones bound. size_t is uintptr and CUdeviceptr is uint64; handles
// (CUcontext, CUstream, CUmodule, CUfunction) are uintptr.
type cudaAPI struct {
	cuInit                    func(flags uint32) cuResult
	cuDriverGetVersion        func(version *int32) cuResult
	cuDeviceGetCount          func(count *int32) cuResult
	cuDeviceGet               func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, length int32, dev int32) cuResult
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) cuResult
	cuDeviceGetAttribute      func(value *int32, attr int32, dev int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease func(dev int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuStreamCreate            func(stream *uintptr, flags uint32) cuResult
	cuStreamQuery             func(stream uintptr) cuResult
	cuStreamDestroy           func(stream uintptr) cuResult
	cuMemAlloc                func(dptr *uint64, size uintptr) cuResult
	cuMemFree                 func(dptr uint64) cuResult
	cuMemAllocAsync           func(dptr *uint64, size uintptr, stream uintptr) cuResult // optional (CUDA 11.2+)
	cuMemFreeAsync            func(dptr uint64, stream uintptr) cuResult                // optional (CUDA 11.2+)
	cuMemsetD8Async           func(dptr uint64, value uint8, n uintptr, stream uintptr) cuResult
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uintptr, stream uintptr) cuResult
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uintptr, stream uintptr) cuResult
	cuMemHostAlloc            func(p *unsafe.Pointer, n uintptr, flags uint32) cuResult
	cuMemFreeHost             func(p unsafe.Pointer) cuResult
	cuEventCreate             func(event *uintptr, flags uint32) cuResult
	cuEventRecord             func(event uintptr, stream uintptr) cuResult
	cuEventQuery              func(event uintptr) cuResult
	cuEventDestroy            func(event uintptr) cuResult
	cuModuleLoadData          func(module *uintptr, image unsafe.Pointer) cuResult
	cuModuleGetFunction       func(fn *uintptr, module uintptr, name string) cuResult
	cuModuleUnload            func(module uintptr) cuResult
	cuLaunchKernel            func(fn uintptr, gx, gy, gz, bx, by, bz, sharedMem uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) cuResult
	cuGetErrorName            func(code cuResult, name **byte) cuResult
	cuGetErrorString          func(code cuResult, desc **byte) cuResult
}

// symbols lists the driver's entry points for bind.
func (a *cudaAPI) symbols() []symbol {
	return []symbol{
		{fptr: &a.cuInit, name: "cuInit"},
		{fptr: &a.cuDriverGetVersion, name: "cuDriverGetVersion"},
		{fptr: &a.cuDeviceGetCount, name: "cuDeviceGetCount"},
		{fptr: &a.cuDeviceGet, name: "cuDeviceGet"},
		{fptr: &a.cuDeviceGetName, name: "cuDeviceGetName"},
		{fptr: &a.cuDeviceTotalMem, name: "cuDeviceTotalMem_v2"},
		{fptr: &a.cuDeviceGetAttribute, name: "cuDeviceGetAttribute"},
		{fptr: &a.cuDevicePrimaryCtxRetain, name: "cuDevicePrimaryCtxRetain"},
		{fptr: &a.cuDevicePrimaryCtxRelease, name: "cuDevicePrimaryCtxRelease_v2", alts: []string{"cuDevicePrimaryCtxRelease"}},
		{fptr: &a.cuCtxSetCurrent, name: "cuCtxSetCurrent"},
		{fptr: &a.cuStreamCreate, name: "cuStreamCreate"},
		{fptr: &a.cuStreamQuery, name: "cuStreamQuery"},
		{fptr: &a.cuStreamDestroy, name: "cuStreamDestroy_v2", alts: []string{"cuStreamDestroy"}},
		{fptr: &a.cuMemAlloc, name: "cuMemAlloc_v2"},
		{fptr: &a.cuMemFree, name: "cuMemFree_v2"},
		{fptr: &a.cuMemAllocAsync, name: "cuMemAllocAsync", optional: true},
		{fptr: &a.cuMemFreeAsync, name: "cuMemFreeAsync", optional: true},
		{fptr: &a.cuMemsetD8Async, name: "cuMemsetD8Async"},
		{fptr: &a.cuMemcpyHtoDAsync, name: "cuMemcpyHtoDAsync_v2"},
		{fptr: &a.cuMemcpyDtoHAsync, name: "cuMemcpyDtoHAsync_v2"},
		{fptr: &a.cuMemHostAlloc, name: "cuMemHostAlloc"},
		{fptr: &a.cuMemFreeHost, name: "cuMemFreeHost"},
		{fptr: &a.cuEventCreate, name: "cuEventCreate"},
		{fptr: &a.cuEventRecord, name: "cuEventRecord"},
		{fptr: &a.cuEventQuery, name: "cuEventQuery"},
		{fptr: &a.cuEventDestroy, name: "cuEventDestroy_v2", alts: []string{"cuEventDestroy"}},
		{fptr: &a.cuModuleLoadData, name: "cuModuleLoadData"},
		{fptr: &a.cuModuleGetFunction, name: "cuModuleGetFunction"},
		{fptr: &a.cuModuleUnload, name: "cuModuleUnload"},
		{fptr: &a.cuLaunchKernel, name: "cuLaunchKernel"},
		{fptr: &a.cuGetErrorName, name: "cuGetErrorName"},
		{fptr: &a.cuGetErrorString, name: "cuGetErrorString"},
	}
}

// hasAsyncAlloc reports whether the stream-ordered allocator is bound.
func (a *cudaAPI) hasAsyncAlloc() bool {
	return a.cuMemAllocAsync != nil && a.cuMemFreeAsync != nil
}

// check turns a CUresult of the C function fn into an error: nil for
// CUDA_SUCCESS, else a *statusError with the result's name and description
// from cuGetErrorName and cuGetErrorString.
func (a *cudaAPI) check(fn string, r cuResult) error {
	if r == cudaSuccess {
		return nil
	}
	name := fmt.Sprintf("CUDA_ERROR_%d", int(r))
	var p *byte
	if a.cuGetErrorName(r, &p) == cudaSuccess && p != nil {
		name = goString(p)
	}
	var desc string
	p = nil
	if a.cuGetErrorString(r, &p) == cudaSuccess && p != nil {
		desc = goString(p)
	}
	return &statusError{fn: fn, code: int(r), name: name, desc: desc, oom: r == cudaErrorOOM}
}
