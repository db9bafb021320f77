package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"unsafe"
)

// DType is the element type of a device array.
type DType int

const (
	// Float32 is float in C, Float32Array in JavaScript.
	Float32 DType = iota + 1
	// Float64 is double in C, Float64Array in JavaScript.
	Float64
	// BFloat16 is bfloat16 (8 exponent bits, 7 mantissa bits; __nv_bfloat16
	// in CUDA), 'bf16' in JavaScript: made from and read back as float32,
	// converted on the device with rounding to nearest even.
	BFloat16
	// Float16 is IEEE half precision (__half in CUDA), 'f16' in JavaScript,
	// made and read back as BFloat16 is.
	Float16
)

// String returns "float32", "float64", "bf16" or "f16".
func (t DType) String() string {
	switch t {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case BFloat16:
		return "bf16"
	case Float16:
		return "f16"
	}
	return fmt.Sprintf("dtype(%d)", int(t))
}

// Size returns the size of one element in bytes.
func (t DType) Size() int {
	switch t {
	case Float32:
		return 4
	case Float64:
		return 8
	case BFloat16, Float16:
		return 2
	}
	return 0
}

// half reports whether t is one of the 16-bit types, which the host reads
// and writes as float32.
func (t DType) half() bool { return t == BFloat16 || t == Float16 }

// valid reports whether t is a known element type.
func (t DType) valid() bool { return t >= Float32 && t <= Float16 }

// Float constrains the host element types of device arrays.
type Float interface {
	float32 | float64
}

// dtypeOf returns the DType of T.
func dtypeOf[T Float]() DType {
	var zero T
	if unsafe.Sizeof(zero) == 4 {
		return Float32
	}
	return Float64
}

// errArrayFreed is the error of an operation on a freed array.
var errArrayFreed = errors.New("array freed")

// Array is a dense, row-major array in device memory, owned by the
// Resources it was made on: operations take arrays of one Resources only,
// and closing the Resources frees its arrays. Free releases an array
// earlier. An Array that becomes unreachable unfreed is freed by the
// garbage collector, as a backstop only. An Array keeps its Resources
// reachable. It is safe for concurrent use.
//
// Memory comes from the stream-ordered allocator (cuMemAllocAsync on the
// resources' stream, freed with cuMemFreeAsync in stream order) where the
// device supports memory pools, else from cuMemAlloc_v2 and cuMemFree_v2,
// which synchronize.
type Array struct {
	a *arrState
	r *Resources
}

// arrState is the state of an Array, apart from the handle callers hold.
type arrState struct {
	res   *resState
	dtype DType
	shape []int
	n     int
	bytes uintptr
	ptr   uint64 // CUdeviceptr; 0 for an empty array
	freed bool   // guarded by res.mu; set on the device thread
}

// DType returns the element type.
func (x *Array) DType() DType { return x.a.dtype }

// Shape returns a copy of the array's shape.
func (x *Array) Shape() []int { return slices.Clone(x.a.shape) }

// Len returns the number of elements.
func (x *Array) Len() int { return x.a.n }

// Resources returns the resources that own the array.
func (x *Array) Resources() *Resources { return x.r }

// String describes the array, e.g. "gpu.Array(float32 [2 3] on device 0)".
func (x *Array) String() string {
	return fmt.Sprintf("gpu.Array(%v %v on device %d)", x.a.dtype, x.a.shape, x.a.res.info.Ordinal)
}

// shapeSize returns the number of elements of shape, checking that no
// dimension is negative and that the size in bytes of the largest element
// type fits an int.
func shapeSize(shape []int) (int, error) {
	total := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && total > math.MaxInt/8/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		total *= d
	}
	return total, nil
}

// checkShape validates shape against n elements; an empty shape means [n].
func checkShape(shape []int, n int) ([]int, error) {
	if len(shape) == 0 {
		return []int{n}, nil
	}
	total, err := shapeSize(shape)
	if err != nil {
		return nil, err
	}
	if total != n {
		return nil, fmt.Errorf("shape %v holds %d elements, not %d", shape, total, n)
	}
	return slices.Clone(shape), nil
}

// NewArray copies data to a new device array of the given shape (by
// default one-dimensional) on r's stream. data may be reused as soon as
// NewArray returns: it is copied through the resources' page-locked
// staging buffers (see WithPinnedStaging), or staged by the driver when
// staging is off. Errors name deviceArray; a lack of device memory is
// OutOfMemory.
func NewArray[T Float](ctx context.Context, r *Resources, data []T, shape ...int) (*Array, error) {
	if r == nil {
		return nil, opErrorf(OpDeviceArray, "no resources")
	}
	shape, err := checkShape(shape, len(data))
	if err != nil {
		return nil, opError(OpDeviceArray, err)
	}
	var src unsafe.Pointer
	if len(data) > 0 {
		src = unsafe.Pointer(&data[0])
	}
	var x *Array
	if r.s.staged(uintptr(len(data)) * unsafe.Sizeof(data[0])) {
		x, err = r.newStaged(ctx, dtypeOf[T](), shape, asBytes(data))
	} else {
		x, err = r.newArray(ctx, dtypeOf[T](), shape, len(data), src)
	}
	runtime.KeepAlive(data)
	return x, opError(OpDeviceArray, err)
}

// NewArrayOf copies float32 data to a new device array of dtype: Float32
// as NewArray does, or BFloat16 or Float16, converted on the device by a
// kernel (compiled with NVRTC on first use) with rounding to nearest even:
// the data goes up as float32 into a temporary array, freed in stream
// order once converted. Errors name deviceArray.
func NewArrayOf(ctx context.Context, r *Resources, dtype DType, data []float32, shape ...int) (*Array, error) {
	if r == nil {
		return nil, opErrorf(OpDeviceArray, "no resources")
	}
	switch {
	case dtype == Float32:
		return NewArray(ctx, r, data, shape...)
	case !dtype.half():
		return nil, opErrorf(OpDeviceArray, "%v cannot be made from float32 data", dtype)
	}
	shape, err := checkShape(shape, len(data))
	if err != nil {
		return nil, opError(OpDeviceArray, err)
	}
	x, err := r.newArrayUninitialized(ctx, dtype, shape)
	if err != nil {
		return nil, opError(OpDeviceArray, err)
	}
	if err := r.fromFloat32(ctx, x, data); err != nil {
		_ = x.Free()
		return nil, opError(OpDeviceArray, err)
	}
	return x, nil
}

// newStaged allocates an array and fills it from src through the staging
// buffers.
func (r *Resources) newStaged(ctx context.Context, dtype DType, shape []int, src []byte) (*Array, error) {
	x, err := r.newArrayUninitialized(ctx, dtype, shape)
	if err != nil {
		return nil, err
	}
	if err := r.s.copyIn(ctx, x.a, src); err != nil {
		_ = x.Free()
		return nil, err
	}
	return x, nil
}

// asBytes returns the memory of f as bytes.
func asBytes[T Float](f []T) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*int(unsafe.Sizeof(f[0])))
}

// Zeros returns a new device array of zeros of the given type and shape
// (cuMemsetD8Async on the stream).
func (r *Resources) Zeros(ctx context.Context, dtype DType, shape ...int) (*Array, error) {
	if !dtype.valid() {
		return nil, opErrorf(OpDeviceArray, "unknown element type %v", dtype)
	}
	if len(shape) == 0 {
		return nil, opErrorf(OpDeviceArray, "no shape")
	}
	n, err := shapeSize(shape)
	if err != nil {
		return nil, opError(OpDeviceArray, err)
	}
	x, err := r.newArray(ctx, dtype, slices.Clone(shape), n, nil)
	return x, opError(OpDeviceArray, err)
}

// newArray allocates an array and fills it from src, or with zeros when
// src is nil.
func (r *Resources) newArray(ctx context.Context, dtype DType, shape []int, n int, src unsafe.Pointer) (*Array, error) {
	s := r.s
	a := &arrState{res: s, dtype: dtype, shape: shape, n: n, bytes: uintptr(n) * uintptr(dtype.Size())}
	api := s.drv.api
	err := s.onThread(ctx, func() error {
		if a.bytes == 0 {
			return s.register(a)
		}
		if err := s.allocOnThread(a); err != nil {
			return err
		}
		var err error
		if src != nil {
			err = api.check("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync(a.ptr, src, a.bytes, s.stream))
		} else {
			err = api.check("cuMemsetD8Async", api.cuMemsetD8Async(a.ptr, 0, a.bytes, s.stream))
		}
		if err != nil {
			return errors.Join(err, s.freeOnThread(a))
		}
		return s.register(a)
	})
	if err != nil {
		return nil, err
	}
	return r.handleFor(a), nil
}

// handleFor returns the handle of a new array, with the cleanup that frees
// it if it is collected unfreed.
func (r *Resources) handleFor(a *arrState) *Array {
	x := &Array{a: a, r: r}
	runtime.AddCleanup(x, (*arrState).collected, a)
	return x
}

// register adds a to the resources' arrays. It runs on the device thread.
func (s *resState) register(a *arrState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrays[a] = struct{}{}
	return nil
}

// allocOnThread allocates a's memory. It runs on the device thread.
func (s *resState) allocOnThread(a *arrState) error {
	api := s.drv.api
	var err error
	if s.info.MemoryPools {
		err = api.check("cuMemAllocAsync", api.cuMemAllocAsync(&a.ptr, a.bytes, s.stream))
	} else {
		err = api.check("cuMemAlloc_v2", api.cuMemAlloc(&a.ptr, a.bytes))
	}
	if err != nil {
		a.ptr = 0
		return fmt.Errorf("allocating %d bytes on device %d: %w", a.bytes, s.info.Ordinal, err)
	}
	return nil
}

// freeOnThread frees a's memory, once. It runs on the device thread.
func (s *resState) freeOnThread(a *arrState) error {
	s.mu.Lock()
	if a.freed {
		s.mu.Unlock()
		return nil
	}
	a.freed = true
	delete(s.arrays, a)
	s.mu.Unlock()
	if a.ptr == 0 {
		return nil
	}
	api := s.drv.api
	if s.info.MemoryPools {
		return api.check("cuMemFreeAsync", api.cuMemFreeAsync(a.ptr, s.stream))
	}
	return api.check("cuMemFree_v2", api.cuMemFree(a.ptr))
}

// ptrOnThread returns the device pointer of an array of these resources.
// It runs on the device thread.
func (s *resState) ptrOnThread(x *Array) (uint64, error) {
	if x == nil {
		return 0, errors.New("no array")
	}
	if x.a.res != s {
		return 0, fmt.Errorf("%v belongs to other resources", x)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if x.a.freed {
		return 0, errArrayFreed
	}
	return x.a.ptr, nil
}

// Free frees the array's device memory, in stream order: work already
// queued that reads it runs first. Free is idempotent, and an array of
// closed resources is already freed. Later operations on it fail with a
// Logic error.
func (x *Array) Free() error {
	s := x.a.res
	err := s.onThread(context.Background(), func() error {
		s.use.Lock() // not under a copy on a caller's thread (direct)
		defer s.use.Unlock()
		return s.freeOnThread(x.a)
	})
	if errors.Is(err, errResourcesClosed) || errors.Is(err, errDriverClosed) {
		err = nil
	}
	return opError(OpArrayFree, err)
}

// collected runs when an Array handle was collected unfreed.
func (a *arrState) collected() {
	s := a.res
	s.mu.Lock()
	done := a.freed || s.closed
	s.mu.Unlock()
	if done {
		return
	}
	go func() {
		_ = s.onThread(context.Background(), func() error {
			s.use.Lock()
			defer s.use.Unlock()
			return s.freeOnThread(a)
		})
	}()
}

// CopyToHost copies the array into dst once the work queued before it on
// the array's stream has run, waiting as Sync does (ctx ends the wait). dst
// must have the array's length and element type, or be float32 for a
// BFloat16 or Float16 array, which is converted on the device into a
// temporary float32 array first. The copy goes through the staging buffers
// (see WithPinnedStaging); with staging off, into dst directly, after a
// Sync. Errors name arrayToHost.
func CopyToHost[T Float](ctx context.Context, x *Array, dst []T) error {
	if x == nil {
		return opErrorf(OpArrayToHost, "no array")
	}
	want := dtypeOf[T]()
	if len(dst) != x.a.n {
		return opErrorf(OpArrayToHost, "%v has %d elements, the destination %d", x, x.a.n, len(dst))
	}
	if x.a.dtype.half() && want == Float32 {
		return opError(OpArrayToHost, x.r.toFloat32(ctx, x, any(dst).([]float32)))
	}
	if want != x.a.dtype {
		return opErrorf(OpArrayToHost, "%v cannot be copied into %v elements", x, want)
	}
	err := copyToHost(ctx, x, asBytes(dst))
	runtime.KeepAlive(dst)
	return opError(OpArrayToHost, err)
}

// copyToHost copies all of x into dst, which has x's size.
func copyToHost(ctx context.Context, x *Array, dst []byte) error {
	s := x.a.res
	if s.staged(x.a.bytes) {
		if err := checkLive(s, x); err != nil {
			return err
		}
		err := s.copyOut(ctx, dst, x.a)
		runtime.KeepAlive(x) // its cleanup would free x.a under the copy
		return err
	}
	api := s.drv.api
	// A copy into pageable memory returns only once it is done, that is
	// after the stream's earlier work: wait for that here, polling, where
	// ctx can end the wait, rather than in the driver on the device's
	// thread, which every Resources of the device shares.
	if err := s.sync(ctx); err != nil {
		return err
	}
	err := s.onThread(ctx, func() error {
		ptr, err := s.ptrOnThread(x)
		if err != nil || x.a.bytes == 0 {
			return err
		}
		return api.check("cuMemcpyDtoHAsync_v2", api.cuMemcpyDtoHAsync(unsafe.Pointer(&dst[0]), ptr, x.a.bytes, s.stream))
	})
	if err == nil {
		err = s.sync(ctx)
	}
	return err
}

// checkLive checks that x is an array of open resources, not freed.
func checkLive(s *resState, x *Array) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errResourcesClosed
	}
	if x.a.freed {
		return errArrayFreed
	}
	return nil
}

// CopyFromHost copies src into the array on its stream. src must have the
// array's length and element type, or be float32 for a BFloat16 or
// Float16 array (converted on the device). It returns once the copy is
// queued, and src may be reused at once: it is copied through the staging
// buffers, or staged by the driver when staging is off. Errors name
// arrayFromHost.
func CopyFromHost[T Float](ctx context.Context, x *Array, src []T) error {
	if x == nil {
		return opErrorf(OpArrayFromHost, "no array")
	}
	want := dtypeOf[T]()
	if len(src) != x.a.n {
		return opErrorf(OpArrayFromHost, "%v has %d elements, the source %d", x, x.a.n, len(src))
	}
	if x.a.dtype.half() && want == Float32 {
		return opError(OpArrayFromHost, x.r.fromFloat32(ctx, x, any(src).([]float32)))
	}
	if want != x.a.dtype {
		return opErrorf(OpArrayFromHost, "%v cannot be filled from %v elements", x, want)
	}
	err := copyFromHost(ctx, x, asBytes(src))
	runtime.KeepAlive(src)
	return opError(OpArrayFromHost, err)
}

// copyFromHost copies src, of x's size, into x.
func copyFromHost(ctx context.Context, x *Array, src []byte) error {
	s := x.a.res
	if s.staged(x.a.bytes) {
		if err := checkLive(s, x); err != nil {
			return err
		}
		err := s.copyIn(ctx, x.a, src)
		runtime.KeepAlive(x) // its cleanup would free x.a under the copy
		return err
	}
	api := s.drv.api
	return s.onThread(ctx, func() error {
		ptr, err := s.ptrOnThread(x)
		if err != nil || x.a.bytes == 0 {
			return err
		}
		return api.check("cuMemcpyHtoDAsync_v2", api.cuMemcpyHtoDAsync(ptr, unsafe.Pointer(&src[0]), x.a.bytes, s.stream))
	})
}
