package gpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// device is the thread of one device: a goroutine locked to its OS thread
// that retained the device's primary context and made it current, and that
// runs every driver call for the device, one at a time, from a channel. So
// no caller's thread needs a current context, and the calls on a device are
// ordered as they arrive.
//
// The fields below calls are touched only by that goroutine.
type device struct {
	api     *cudaAPI
	ordinal int
	cu      int32   // CUdevice
	ctx     uintptr // the primary context, retained by the thread
	calls   chan call
	quit    chan struct{}
	exited  chan struct{}
	stopErr error // the release's error; read after exited is closed

	modules map[kernelKey]uintptr // loaded modules by compiled-program key
	funcs   map[funcKey]uintptr   // kernel functions by module and name
	idle    []idleHandle          // library handles of closed resources, for the next ones

	bufMu    sync.Mutex
	idleBufs []*stagingBuf // staging buffers of closed resources, for the next ones; guarded by bufMu
}

// idleHandle is a library handle that closed resources gave back, unbound
// from their stream. Destroying a cuBLAS handle synchronizes the whole
// device (cublasDestroy calls cublasDeviceSynchronize), which would stall
// every stream of the device at each Close; so handles are kept for the
// next resources of the device and destroyed with the device thread.
type idleHandle struct {
	lib     Library
	h       uintptr
	destroy func(uintptr) libStatus
}

// maxIdleHandles bounds the idle handles a device keeps per library.
const maxIdleHandles = 16

// takeIdle returns an idle handle of lib, or 0. It runs on the device
// thread.
func (d *device) takeIdle(lib Library) uintptr {
	for i := len(d.idle) - 1; i >= 0; i-- {
		if d.idle[i].lib == lib {
			h := d.idle[i].h
			d.idle = append(d.idle[:i], d.idle[i+1:]...)
			return h
		}
	}
	return 0
}

// putIdle keeps h, a handle of lib already unbound from its stream, for
// later resources, or destroys it when the device keeps enough. It runs on
// the device thread.
func (d *device) putIdle(lib Library, h uintptr, destroy func(uintptr) libStatus) error {
	n := 0
	for _, x := range d.idle {
		if x.lib == lib {
			n++
		}
	}
	if n >= maxIdleHandles {
		return libCheck(lib, libFunc(lib, "Destroy"), destroy(h))
	}
	d.idle = append(d.idle, idleHandle{lib: lib, h: h, destroy: destroy})
	return nil
}

// call is one function for the device thread; its error comes back on done.
type call struct {
	fn   func() error
	done chan error
}

// startDevice starts the thread of device ordinal and waits until it has
// the primary context current.
func startDevice(api *cudaAPI, ordinal int) (*device, error) {
	d := &device{
		api:     api,
		ordinal: ordinal,
		calls:   make(chan call),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
		modules: map[kernelKey]uintptr{},
		funcs:   map[funcKey]uintptr{},
	}
	ready := make(chan error, 1)
	go d.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// run is the device thread. It never unlocks its OS thread: when it
// returns, the runtime ends the thread, and the context that was current
// on it goes with it.
func (d *device) run(ready chan<- error) {
	runtime.LockOSThread()
	defer close(d.exited)
	api := d.api
	if err := api.check("cuDeviceGet", api.cuDeviceGet(&d.cu, int32(d.ordinal))); err != nil {
		ready <- err
		return
	}
	if err := api.check("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&d.ctx, d.cu)); err != nil {
		ready <- err
		return
	}
	if err := api.check("cuCtxSetCurrent", api.cuCtxSetCurrent(d.ctx)); err != nil {
		_ = api.cuDevicePrimaryCtxRelease(d.cu)
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case c := <-d.calls:
			c.done <- d.invoke(c.fn)
		case <-d.quit:
			d.stopErr = d.release()
			return
		}
	}
}

// invoke runs fn, turning a panic into an error so that a bad call cannot
// take the device thread, and with it the process, down.
func (d *device) invoke(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic on the thread of device %d: %v", d.ordinal, p)
		}
	}()
	return fn()
}

// release destroys the idle library handles, frees the idle staging
// buffers, unloads the thread's
// modules and drops its context reference.
func (d *device) release() error {
	api := d.api
	var errs []error
	for _, x := range d.idle {
		errs = append(errs, libCheck(x.lib, libFunc(x.lib, "Destroy"), x.destroy(x.h)))
	}
	d.idle = nil
	d.bufMu.Lock()
	bufs := d.idleBufs
	d.idleBufs = nil
	d.bufMu.Unlock()
	for _, b := range bufs {
		// A buffer under a copy still queued (behind a kernel that never
		// ends, say) is left to the process's exit: freeing memory under
		// a DMA is not safe, and cuMemFreeHost could wait for it forever.
		if b.busy && api.cuEventQuery(b.event) == cudaErrorNotReady {
			continue
		}
		errs = append(errs, d.freeBuf(b))
	}
	for _, m := range d.modules {
		errs = append(errs, api.check("cuModuleUnload", api.cuModuleUnload(m)))
	}
	d.modules, d.funcs = nil, nil
	errs = append(errs, api.check("cuCtxSetCurrent", api.cuCtxSetCurrent(0)))
	errs = append(errs, api.check("cuDevicePrimaryCtxRelease_v2", api.cuDevicePrimaryCtxRelease(d.cu)))
	return errors.Join(errs...)
}

// do runs fn on the device thread and returns its error. ctx bounds the
// wait for the thread to take the call; once taken, the call runs to the
// end, since a C call cannot be interrupted, and do waits for it.
func (d *device) do(ctx context.Context, fn func() error) error {
	c := call{fn: fn, done: make(chan error, 1)}
	select {
	case d.calls <- c:
	case <-d.quit:
		return errDriverClosed
	case <-ctx.Done():
		return fmt.Errorf("waiting for the thread of device %d: %w", d.ordinal, ctx.Err())
	}
	return <-c.done
}

// stop ends the device thread after the call it is running, if any, and
// returns the error of releasing its context.
func (d *device) stop() error {
	close(d.quit)
	<-d.exited
	return d.stopErr
}
