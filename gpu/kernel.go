package gpu

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Kernel is a CUDA C kernel to compile with NVRTC: Source holds an
// extern "C" __global__ function called Name. Options go to
// nvrtcCompileProgram; unless they name an architecture (--gpu-architecture
// or -arch), the device's own is added. That is its real architecture
// (e.g. --gpu-architecture=sm_90), so that NVRTC gives machine code (a
// cubin), which a driver older than NVRTC still loads, within the same
// CUDA major version. PTX, which the driver compiles when it loads it, is
// the fallback: the virtual architecture (compute_90) for an NVRTC too old
// to know the device, or without nvrtcGetCUBIN, or one that an option
// names.
//
// A Kernel is a value: compiled PTX is cached by the Driver by a hash of
// the source and the options, and loaded modules by each device's thread,
// so launching the same Kernel again compiles and loads nothing.
type Kernel struct {
	Source  string
	Name    string
	Options []string
}

// Dim3 is a grid or block size. A zero Y or Z means 1; X must be positive.
type Dim3 struct {
	X, Y, Z uint32
}

// LaunchConfig is the shape of a launch: Grid blocks of Block threads each,
// with SharedMem bytes of dynamic shared memory per block.
type LaunchConfig struct {
	Grid      Dim3
	Block     Dim3
	SharedMem uint32
}

// kernelKey identifies a compiled program: a SHA-256 of the source and the
// effective options.
type kernelKey [sha256.Size]byte

// funcKey identifies a kernel function in a device's loaded modules.
type funcKey struct {
	program kernelKey
	name    string
}

// kernelCache holds compiled images (a cubin, or NUL-terminated PTX) by
// key; it is safe for concurrent use. Only successful compilations are
// kept.
type kernelCache struct {
	mu     sync.Mutex
	images map[kernelKey][]byte
}

func (c *kernelCache) get(k kernelKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.images[k]
}

func (c *kernelCache) put(k kernelKey, image []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.images == nil {
		c.images = map[kernelKey][]byte{}
	}
	c.images[k] = image
}

// CompiledKernels returns the number of compiled programs in the Driver's
// cache.
func (d *Driver) CompiledKernels() int {
	d.kernels.mu.Lock()
	defer d.kernels.mu.Unlock()
	return len(d.kernels.images)
}

// effectiveOptions returns k's options with the device's architecture
// added when they name none: the real one (sm_XY) when machineCode is
// set, else the virtual one (compute_XY). added reports whether it added
// one.
func effectiveOptions(k Kernel, info DeviceInfo, machineCode bool) (opts []string, added bool) {
	opts = append([]string(nil), k.Options...)
	for _, o := range opts {
		if strings.HasPrefix(o, "--gpu-architecture") || strings.HasPrefix(o, "-arch") {
			return opts, false
		}
	}
	arch := "compute"
	if machineCode {
		arch = "sm"
	}
	return append(opts, fmt.Sprintf("--gpu-architecture=%s_%d%d", arch, info.Major, info.Minor)), true
}

// realArch reports whether opts name a real architecture (sm_XY), for
// which NVRTC makes a cubin.
func realArch(opts []string) bool {
	for i, o := range opts {
		if !strings.HasPrefix(o, "--gpu-architecture") && !strings.HasPrefix(o, "-arch") {
			continue
		}
		if strings.Contains(o, "sm_") || (i+1 < len(opts) && strings.HasPrefix(opts[i+1], "sm_")) {
			return true
		}
	}
	return false
}

func keyOf(k Kernel, opts []string) kernelKey {
	h := sha256.New()
	h.Write([]byte(k.Source))
	for _, o := range opts {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	var key kernelKey
	h.Sum(key[:0])
	return key
}

// compile returns k's image for the device info describes, and its cache
// key: a cubin where NVRTC can make one, else PTX (see Kernel). It runs on
// the caller's goroutine: NVRTC needs no context.
func (d *Driver) compile(k Kernel, info DeviceInfo) (kernelKey, []byte, error) {
	if err := d.loadLibrary(NVRTC); err != nil {
		return kernelKey{}, nil, err
	}
	api := &d.libs.nvrtc
	opts, added := effectiveOptions(k, info, api.hasCUBIN())
	key, image, err := d.compileWith(k, opts)
	var se *statusError
	if err != nil && added && api.hasCUBIN() && errors.As(err, &se) && se.fn == "nvrtcCompileProgram" && se.code == nvrtcErrorInvalidOption {
		// An NVRTC older than the device knows no sm_XY for it; the
		// driver compiles PTX for it.
		opts, _ = effectiveOptions(k, info, false)
		return d.compileWith(k, opts)
	}
	return key, image, err
}

// compileWith returns k's image for opts, from the cache or from NVRTC:
// its cubin when opts name a real architecture and NVRTC gives one, else
// its PTX (NUL-terminated).
func (d *Driver) compileWith(k Kernel, opts []string) (kernelKey, []byte, error) {
	key := keyOf(k, opts)
	if image := d.kernels.get(key); image != nil {
		return key, image, nil
	}
	api := &d.libs.nvrtc
	var prog uintptr
	if err := api.check("nvrtcCreateProgram", api.createProgram(&prog, k.Source, k.Name+".cu", 0, nil, nil)); err != nil {
		return key, nil, err
	}
	defer func() { _ = api.destroyProgram(&prog) }()

	var pin runtime.Pinner
	defer pin.Unpin()
	cs := make([]*byte, len(opts))
	for i, o := range opts {
		b := cString(o)
		pin.Pin(&b[0])
		cs[i] = &b[0]
	}
	var optp unsafe.Pointer
	if len(cs) > 0 {
		optp = unsafe.Pointer(&cs[0])
	}
	r := api.compileProgram(prog, int32(len(cs)), optp)
	runtime.KeepAlive(cs)
	if err := api.check("nvrtcCompileProgram", r); err != nil {
		var se *statusError
		if errors.As(err, &se) {
			se.log = strings.TrimSpace(programLog(api, prog))
		}
		return key, nil, err
	}
	if realArch(opts) && api.hasCUBIN() {
		var n uintptr
		if err := api.check("nvrtcGetCUBINSize", api.getCUBINSize(prog, &n)); err != nil {
			return key, nil, err
		}
		if n > 0 {
			cubin := make([]byte, n)
			if err := api.check("nvrtcGetCUBIN", api.getCUBIN(prog, &cubin[0])); err != nil {
				return key, nil, err
			}
			d.kernels.put(key, cubin)
			return key, cubin, nil
		}
	}
	var n uintptr
	if err := api.check("nvrtcGetPTXSize", api.getPTXSize(prog, &n)); err != nil {
		return key, nil, err
	}
	if n == 0 {
		return key, nil, errors.New("nvrtcGetPTX: empty PTX")
	}
	ptx := make([]byte, n)
	if err := api.check("nvrtcGetPTX", api.getPTX(prog, &ptx[0])); err != nil {
		return key, nil, err
	}
	ptx[n-1] = 0
	d.kernels.put(key, ptx)
	return key, ptx, nil
}

// programLog returns NVRTC's log of prog, or "".
func programLog(api *nvrtcAPI, prog uintptr) string {
	var n uintptr
	if api.getLogSize(prog, &n) != 0 || n <= 1 {
		return ""
	}
	b := make([]byte, n)
	if api.getLog(prog, &b[0]) != 0 {
		return ""
	}
	return goString(&b[0])
}

// prepare compiles k (or finds it in the cache) and returns a closure that
// returns k's function on the resources' device, loading the module on
// first use. The closure runs on the device thread.
func (s *resState) prepare(k Kernel) (func() (uintptr, error), error) {
	if k.Name == "" {
		return nil, errors.New("kernel has no name")
	}
	key, image, err := s.drv.compile(k, s.info)
	if err != nil {
		return nil, fmt.Errorf("compiling kernel %s: %w", k.Name, err)
	}
	api := s.drv.api
	dev := s.dev
	return func() (uintptr, error) {
		fk := funcKey{program: key, name: k.Name}
		if f, ok := dev.funcs[fk]; ok {
			return f, nil
		}
		m, ok := dev.modules[key]
		if !ok {
			if err := api.check("cuModuleLoadData", api.cuModuleLoadData(&m, unsafe.Pointer(&image[0]))); err != nil {
				return 0, fmt.Errorf("loading kernel %s: %w", k.Name, err)
			}
			dev.modules[key] = m
		}
		var f uintptr
		if err := api.check("cuModuleGetFunction", api.cuModuleGetFunction(&f, m, k.Name)); err != nil {
			return 0, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		dev.funcs[fk] = f
		return f, nil
	}, nil
}

// LoadKernel compiles k for the resources' device and loads it, so that a
// bad kernel fails here, with NVRTC's log in the message, rather than at
// its first launch. Launch does the same on first use. Errors name
// compileKernel.
func (r *Resources) LoadKernel(ctx context.Context, k Kernel) error {
	s := r.s
	get, err := s.prepare(k)
	if err != nil {
		return opError(OpCompileKernel, err)
	}
	err = s.onThread(ctx, func() error {
		_, err := get()
		return err
	})
	return opError(OpCompileKernel, err)
}

// Launch queues kernel k on the resources' stream with the launch shape
// cfg and the arguments args, in the order of the kernel's parameters:
// *Array (passed as its device pointer; it must belong to these
// resources), float32, float64, int32 or int64. It compiles and loads k on
// first use and returns once the launch is queued; a failure of the running
// kernel comes back from a later Sync. Errors name launchKernel.
func (r *Resources) Launch(ctx context.Context, k Kernel, cfg LaunchConfig, args ...any) error {
	return opError(OpLaunchKernel, r.launch(ctx, k, cfg, args))
}

func (r *Resources) launch(ctx context.Context, k Kernel, cfg LaunchConfig, args []any) error {
	grid, block := cfg.Grid, cfg.Block
	for _, d := range []*Dim3{&grid, &block} {
		if d.X == 0 {
			return fmt.Errorf("grid %v and block %v must have a positive X", cfg.Grid, cfg.Block)
		}
		d.Y, d.Z = max(d.Y, 1), max(d.Z, 1)
	}
	for i, a := range args {
		switch a.(type) {
		case *Array, float32, float64, int32, int64:
		default:
			return fmt.Errorf("argument %d is a %T; want *gpu.Array, float32, float64, int32 or int64", i+1, a)
		}
	}
	s := r.s
	get, err := s.prepare(k)
	if err != nil {
		return err
	}
	api := s.drv.api
	return s.onThread(ctx, func() error {
		f, err := get()
		if err != nil {
			return err
		}
		// cuLaunchKernel reads each argument through a pointer in the
		// params array and copies it before it returns. The values live in
		// Go memory, pinned for the call.
		var pin runtime.Pinner
		defer pin.Unpin()
		params := make([]unsafe.Pointer, len(args))
		for i, a := range args {
			var p unsafe.Pointer
			switch v := a.(type) {
			case *Array:
				ptr, err := s.ptrOnThread(v)
				if err != nil {
					return fmt.Errorf("argument %d: %w", i+1, err)
				}
				p = unsafe.Pointer(&ptr)
			case float32:
				p = unsafe.Pointer(&v)
			case float64:
				p = unsafe.Pointer(&v)
			case int32:
				p = unsafe.Pointer(&v)
			case int64:
				p = unsafe.Pointer(&v)
			}
			pin.Pin(p)
			params[i] = p
		}
		var pp unsafe.Pointer
		if len(params) > 0 {
			pp = unsafe.Pointer(&params[0])
		}
		r := api.cuLaunchKernel(f, grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, cfg.SharedMem, s.stream, pp, nil)
		runtime.KeepAlive(params)
		if err := api.check("cuLaunchKernel", r); err != nil {
			return fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		return nil
	})
}
