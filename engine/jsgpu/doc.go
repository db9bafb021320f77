// Package jsgpu gives workunits riot's GPUs: the JavaScript bindings over
// package gpu (docs/gpu.md, "JavaScript"). They are the seed's procedures
// in camelCase (deviceCount, deviceInfo, deviceResources,
// resourcesDevice, currentDeviceResources, resourcesSync,
// resourcesRelease, withDeviceResources, and the RaftError class), and
// device arrays (deviceArray, deviceZeros, arrayToHost, arrayFromHost,
// arrayFree), matrix products (matMul, gemm) and kernels (compileKernel,
// launchKernel) on a resources' stream, with the classes
// DeviceResources, DeviceArray and DeviceKernel.
//
// The bindings are an engine.Binding: the engine installs them into
// every sandbox it makes, after its own globals, and knows nothing of
// GPUs but the ordinals it lists as riot.worker.gpus (engine.Options.GPUs,
// engine.Request.GPUs). Package gpu knows no JavaScript: this package
// adapts one to the other and adds nothing to what the driver does.
//
// Every call that can wait passes the running workunit's context
// (engine.Sandbox.Context) to package gpu, so that a time limit or an
// interrupt ends the wait and the workunit fails with it. Every
// *gpu.Error is thrown as a RaftError whose message names the procedure
// the script called. A call that names no device uses the workunit's
// first (riot.worker.gpus[0]). The resources a sandbox made, with their
// arrays, are released when the engine drops the sandbox.
//
// # Usage
//
//	drv := worker.OpenGPU(logger) // or gpu.Open(...); nil: no GPUs
//	defer drv.Close()             // after the engine
//	eng, err := engine.New(engine.Options{
//		Bindings: []engine.Binding{jsgpu.Binding(drv)},
//		GPUs:     jsgpu.Ordinals(drv),
//	})
//
// Workers always install the bindings (package worker does), with a
// driver or without, so that a workunit sees the same globals everywhere
// and, on a worker without a GPU, is told why there is none. A program
// that embeds the engine installs them only if it wants them.
//
// The caller's duties:
//
//  1. Open the driver before the engine and close it after the engine.
//  2. Give the engine the driver's ordinals (Ordinals) as Options.GPUs,
//     so that riot.worker.gpus lists the devices.
package jsgpu
