// Package gputest holds riot's end-to-end tests of GPU work: the job
// scripts scripts/gpu-*.js run by package job against a tracker
// (tracker/trackertest) and workers (worker.Run) whose engines have a GPU
// driver, and the placement of workunits that ask for GPUs
// (riot.with({gpus: n})) on workers with free devices.
//
// The package has no API: everything is in its tests. They need no GPU:
// the driver is the FAKE in gpu/testdata/fakecuda.c, a test double built
// with gcc into each test's temporary directory and opened with
// gpu.WithDriverLibrary in place of libcuda.so.1 (the tests skip when gcc
// is missing). It is not CUDA; it keeps "device" memory in host memory and
// runs a few kernels (axpy_f32 among them) by name. What the real driver
// does with the same scripts is checked by scripts/gpu-check.sh on a
// machine with a GPU.
//
// # Usage
//
//	go test ./gputest/
//
// # The caller's duties
//
//  1. Have gcc on the PATH, or the tests skip.
//  2. Run from the repository (the tests read ../scripts and
//     ../gpu/testdata).
package gputest
