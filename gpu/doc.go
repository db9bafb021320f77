// Package gpu binds CUDA at run time, in pure Go: devices, resources (a
// stream and lazily made cuBLAS, cuSOLVER and cuSPARSE handles), sync,
// device arrays, matrix products, kernels compiled with NVRTC, and errors
// that tell a full GPU from a bad call. It is the Go half of riot's GPU
// support; engine/jsgpu adapts it to JavaScript, and the Op
// constants are the JavaScript names.
//
// # Binding
//
// libcuda.so.1 is loaded with dlopen (github.com/ebitengine/purego) when
// Open is called, so one binary, built with or without cgo, runs on hosts
// with and without GPUs. RIOT_CUDA_LIBRARY (or WithDriverLibrary) names
// another file. cuBLAS, cuSOLVER, cuSPARSE and NVRTC are loaded on first
// use (CUDA 13 names first, then 12; found by the loader's search, in
// $CUDA_HOME/lib64 and in /usr/local/cuda/lib64; overridden by
// RIOT_CUBLAS_LIBRARY, RIOT_CUSOLVER_LIBRARY, RIOT_CUSPARSE_LIBRARY,
// RIOT_NVRTC_LIBRARY or WithLibrary). A host without a driver has zero
// devices, and Open's error, which wraps ErrUnavailable, says why.
//
// All driver calls for a device run on one goroutine locked to its OS
// thread, which retained the device's primary context and made it current;
// callers hand it closures over a channel. No caller needs a current
// context, and nothing blocks an OS thread in the driver while it waits:
// Sync polls cuStreamQuery with backoff.
//
// # Usage
//
//	drv, err := gpu.Open()
//	if err != nil {
//		slog.Info("no GPU", "reason", err) // drv.DeviceCount() == 0
//		return nil
//	}
//	r, err := drv.NewResources(ctx, worker%drv.DeviceCount())
//	if err != nil {
//		return err // *gpu.Error: "deviceResources: no device 4 among 1"
//	}
//	return gpu.WithResources(r, func(r *gpu.Resources) error {
//		a, err := gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2)
//		if err != nil {
//			return err
//		}
//		c, err := r.MatMul(ctx, a, a)
//		if err != nil {
//			return err
//		}
//		out := make([]float32, c.Len())
//		return gpu.CopyToHost(ctx, c, out) // waits for the stream
//	})
//
// # Errors
//
// Every failed operation returns an *Error whose Op is the procedure the
// caller called in its JavaScript spelling and whose Kind is OutOfMemory
// for CUDA_ERROR_OUT_OF_MEMORY and the libraries' allocation failures, and
// Logic for everything else. Messages read "<op>: <what>", with the CUDA
// function, status name and description where a call failed.
//
// # Caller's duties
//
//  1. Open one Driver and share it; it is safe for concurrent use. Close it
//     only when no goroutine uses it any more (at exit it need not be
//     closed).
//  2. Give each worker its own Resources and release them with
//     WithResources or Close. The finalizer is only a backstop: the
//     collector cannot see GPU memory.
//  3. Operations return once queued. Call Sync (or CopyToHost, which
//     syncs) before reading a clock or results; a failure of queued work
//     surfaces there.
//  4. Pass arrays only to operations of the Resources that made them, and
//     do not use an array after Free or after its Resources closed (the
//     call fails with a Logic error).
//  5. Use a handle from LibraryHandle only on the resources' stream and
//     only while the resources are open.
package gpu
