package gpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// errResourcesClosed is the error of an operation on closed resources.
var errResourcesClosed = errors.New("resources closed")

// Resources is what a worker owns on one device: one non-blocking stream
// on the device's primary context, on which its operations run in the
// order they are queued while other Resources' streams overlap, and the
// cuBLAS, cuSOLVER and cuSPARSE handles bound to that stream, made on
// first use. Device arrays made on the Resources belong to it.
//
// Close releases all of it; WithResources closes on return and on panic.
// A Resources that becomes unreachable unclosed is released by the garbage
// collector, as a backstop only: the collector cannot see GPU memory, so it
// may run late or never.
//
// A Resources is safe for concurrent use: calls from several goroutines
// are queued on its stream in the order its device's thread receives them.
type Resources struct {
	s *resState
}

// resState is the state of a Resources, apart from the handle that callers
// hold, so that a cleanup can release it after the handle is collected.
type resState struct {
	drv    *Driver
	dev    *device
	info   DeviceInfo
	stream uintptr // CUstream, created with CU_STREAM_NON_BLOCKING

	// use is held shared by the driver calls made on callers' threads
	// (direct), and exclusively by Close while it frees arrays and
	// destroys the stream, and by Free.
	use   sync.RWMutex
	libMu sync.Mutex // held while a library handle is used on a caller's thread
	stage staging

	// mu guards the fields below. They change only on the device thread,
	// so a function running there sees them stable between its own changes.
	mu      sync.Mutex
	closed  bool
	handles [numLibraries]uintptr  // cuBLAS, cuSOLVER, cuSPARSE handles, 0 until first use
	arrays  map[*arrState]struct{} // live device arrays
}

// NewResources makes new resources on device: it retains the device's
// primary context and creates a non-blocking stream on it; library handles
// come on first use. It is deviceResources in JavaScript. A device the
// driver does not report is a Logic error whose message is exactly
// "deviceResources: no device 4 among 1"; on a host without a driver the
// message goes on to say why there is none.
//
// ctx bounds the wait for the device's thread; the first resources on a
// device also start that thread, which may take as long as the driver
// needs to create the primary context.
func (d *Driver) NewResources(ctx context.Context, device int) (*Resources, error) {
	if err := d.checkDevice(device); err != nil {
		return nil, opError(OpDeviceResources, err)
	}
	d.life.RLock()
	defer d.life.RUnlock()
	dev, err := d.worker(device)
	if err != nil {
		return nil, opError(OpDeviceResources, err)
	}
	s := &resState{drv: d, dev: dev, info: d.devices[device], arrays: map[*arrState]struct{}{}}
	err = dev.do(ctx, func() error {
		api := d.api
		var pctx uintptr
		if err := api.check("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&pctx, dev.cu)); err != nil {
			return err
		}
		if err := api.check("cuStreamCreate", api.cuStreamCreate(&s.stream, streamNonBlocking)); err != nil {
			_ = api.cuDevicePrimaryCtxRelease(dev.cu)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, opError(OpDeviceResources, err)
	}
	if err := d.track(s); err != nil { // not while life is held; kept for safety
		_ = s.close()
		return nil, opError(OpDeviceResources, err)
	}
	r := &Resources{s: s}
	runtime.AddCleanup(r, (*resState).collected, s)
	return r, nil
}

// collected runs when the Resources handle was collected unclosed.
func (s *resState) collected() {
	if s.isClosed() {
		return
	}
	go func() {
		err := s.close()
		s.drv.cfg.logger.Warn("gpu: resources were not closed; the garbage collector released them",
			"device", s.info.Ordinal, "error", err)
	}()
}

// Device returns the device the resources are on. It is resourcesDevice in
// JavaScript.
func (r *Resources) Device() int { return r.s.info.Ordinal }

// DeviceInfo describes the device the resources are on.
func (r *Resources) DeviceInfo() DeviceInfo { return r.s.info }

// Driver returns the Driver the resources were made by.
func (r *Resources) Driver() *Driver { return r.s.drv }

// Closed reports whether Close has run.
func (r *Resources) Closed() bool { return r.s.isClosed() }

// String describes the resources, e.g. "gpu.Resources(device 0)".
func (r *Resources) String() string {
	if r.s.isClosed() {
		return fmt.Sprintf("gpu.Resources(device %d, closed)", r.Device())
	}
	return fmt.Sprintf("gpu.Resources(device %d)", r.Device())
}

func (s *resState) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// onThread runs fn on the device thread after checking, there, that the
// resources are open; fn may then use the stream and the handles.
func (s *resState) onThread(ctx context.Context, fn func() error) error {
	return s.dev.do(ctx, func() error {
		if s.isClosed() {
			return errResourcesClosed
		}
		return fn()
	})
}

// Sync waits until everything queued on the resources' stream has run. It
// polls cuStreamQuery on the caller's thread (no round trip through the
// device thread): back to back for the first 20 µs, so that an idle or
// nearly done stream answers in about a microsecond, then yielding the
// processor between polls until 200 µs, then on a timer, from 50 µs
// doubling up to a millisecond. No OS thread blocks in the driver, and the
// wait ends as soon as ctx does: then Sync returns an error that wraps
// ctx.Err(), and the queued work goes on. A failure of queued work (a
// kernel's illegal address, say) is reported here. It is resourcesSync in
// JavaScript.
func (r *Resources) Sync(ctx context.Context) error {
	return opError(OpResourcesSync, r.s.sync(ctx))
}

func (s *resState) sync(ctx context.Context) error {
	api := s.drv.api
	return s.wait(ctx, "cuStreamQuery", "stream", func() cuResult { return api.cuStreamQuery(s.stream) })
}

// Close releases the resources: it frees their device arrays (in stream
// order), destroys their library handles and their stream, and releases
// their reference to the primary context. Work still queued runs to the end
// first; Close does not wait for it. Close is idempotent: later calls return
// nil, and later operations on the resources fail with a Logic error.
func (r *Resources) Close() error {
	return opError(OpResourcesClose, r.s.close())
}

func (s *resState) close() error {
	if s.isClosed() {
		return nil
	}
	api := s.drv.api
	err := s.dev.do(context.Background(), func() error {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil
		}
		s.closed = true
		arrays, handles := s.arrays, s.handles
		s.arrays, s.handles = nil, [numLibraries]uintptr{}
		bufs := s.releaseStagingLocked()
		s.mu.Unlock()
		// Wait out the driver calls in progress on callers' threads
		// (direct): later ones see closed.
		s.use.Lock()
		defer s.use.Unlock()
		s.dev.putIdleBufsOnThread(bufs, s.drv.cfg.idleStagingBuffers())

		var errs []error
		for a := range arrays {
			errs = append(errs, s.freeOnThread(a))
		}
		for lib, h := range handles {
			if h == 0 {
				continue
			}
			// Unbound from the stream, the handle goes to the device's
			// next resources (see idleHandle).
			l := Library(lib)
			api := s.drv.libs.handleAPI(l)
			if err := libCheck(l, libFunc(l, "SetStream"), api.setStream(h, 0)); err != nil {
				errs = append(errs, err, libCheck(l, libFunc(l, "Destroy"), api.destroy(h)))
				continue
			}
			errs = append(errs, s.dev.putIdle(l, h, api.destroy))
		}
		errs = append(errs, api.check("cuStreamDestroy_v2", api.cuStreamDestroy(s.stream)))
		errs = append(errs, api.check("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease(s.dev.cu)))
		return errors.Join(errs...)
	})
	if errors.Is(err, errDriverClosed) && s.isClosed() {
		err = nil
	}
	s.drv.untrack(s)
	return err
}

// WithResources calls fn with r and closes r when fn returns, and also when
// fn panics, before the panic goes on. fn's error comes back unchanged; an
// error of closing is joined to it. It is withDeviceResources in
// JavaScript, and gives the resources' lifetime a clear end: the finalizer
// alone would release them, but only once the collector notices, and it
// cannot see GPU memory.
func WithResources(r *Resources, fn func(*Resources) error) (err error) {
	if r == nil {
		return opErrorf(OpWithDeviceResources, "no resources")
	}
	defer func() {
		if cerr := opError(OpWithDeviceResources, r.s.close()); cerr != nil {
			if err == nil {
				err = cerr
			} else {
				err = errors.Join(err, cerr)
			}
		}
	}()
	return fn(r)
}

// LibraryHandle returns the resources' handle of lib (CUBLAS, CUSOLVER or
// CUSPARSE), loading the library and creating the handle, bound to the
// resources' stream, on first use. The handle stays owned by the
// resources: do not destroy it, and do not use it after Close. It is for
// calls this package does not wrap yet.
func (r *Resources) LibraryHandle(ctx context.Context, lib Library) (uintptr, error) {
	if lib != CUBLAS && lib != CUSOLVER && lib != CUSPARSE {
		return 0, opErrorf(OpResourcesHandle, "%v has no handle", lib)
	}
	var h uintptr
	err := r.s.withHandle(ctx, lib, func(handle uintptr) error {
		h = handle
		return nil
	})
	return h, opError(OpResourcesHandle, err)
}

// withHandle loads lib, then runs fn on the device thread with the
// resources' handle of lib, created on first use.
func (s *resState) withHandle(ctx context.Context, lib Library, fn func(handle uintptr) error) error {
	if err := s.drv.loadLibrary(lib); err != nil {
		return err
	}
	return s.onThread(ctx, func() error {
		h, err := s.handleOnThread(lib)
		if err != nil {
			return err
		}
		return fn(h)
	})
}

// withHandleDirect is withHandle for calls made on the caller's thread
// (direct): the handle is made on the device thread on first use, then fn
// runs with it under libMu, which keeps the resources' library handles to
// one thread at a time, as cuBLAS and its kind require. fn must not wait
// for the device thread.
func (s *resState) withHandleDirect(ctx context.Context, lib Library, fn func(handle uintptr) error) error {
	if err := s.drv.loadLibrary(lib); err != nil {
		return err
	}
	s.mu.Lock()
	h := s.handles[lib]
	s.mu.Unlock()
	if h == 0 {
		if err := s.onThread(ctx, func() error {
			_, err := s.handleOnThread(lib)
			return err
		}); err != nil {
			return err
		}
	}
	return s.direct(func() error {
		s.mu.Lock()
		h := s.handles[lib]
		s.mu.Unlock()
		if h == 0 { // Close took it after direct's check: it waits for us
			return errResourcesClosed
		}
		s.libMu.Lock()
		defer s.libMu.Unlock()
		return fn(h)
	})
}

// handleOnThread returns the handle of lib, creating it and binding it to
// the stream if it is the first use. It runs on the device thread.
func (s *resState) handleOnThread(lib Library) (uintptr, error) {
	s.mu.Lock()
	h := s.handles[lib]
	s.mu.Unlock()
	if h != 0 {
		return h, nil
	}
	api := s.drv.libs.handleAPI(lib)
	if h = s.dev.takeIdle(lib); h == 0 {
		if err := libCheck(lib, libFunc(lib, "Create"), api.create(&h)); err != nil {
			return 0, fmt.Errorf("creating a %v handle: %w", lib, err)
		}
	}
	if err := libCheck(lib, libFunc(lib, "SetStream"), api.setStream(h, s.stream)); err != nil {
		_ = api.destroy(h)
		return 0, fmt.Errorf("binding a %v handle to the stream: %w", lib, err)
	}
	s.mu.Lock()
	s.handles[lib] = h
	s.mu.Unlock()
	return h, nil
}

// libFunc names a library's handle function for messages, e.g.
// "cublasCreate_v2".
func libFunc(lib Library, what string) string {
	switch lib {
	case CUBLAS:
		return "cublas" + what + "_v2"
	case CUSOLVER:
		return "cusolverDn" + what
	case CUSPARSE:
		return "cusparse" + what
	}
	return lib.String() + " " + what
}
