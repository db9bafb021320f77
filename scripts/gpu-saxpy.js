// gpu-saxpy.js: a kernel from CUDA C source, compiled on the worker.
//
//   riot-worker eval scripts/gpu-saxpy.js [N]
//
// SAXPY, y = a·x + y in single precision, written in CUDA C as the
// kernel axpy_f32. The source travels with the workunit (it is a captured
// string, like any other value); the worker compiles it with NVRTC
// (compileKernel; compilations are cached per worker), launches it on
// N elements (default 2^20), and the script checks the result against the
// same computation on the host. On a worker with a GPU it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   saxpy on 1048576 floats on device 0, compiled with NVRTC: max |y - host| = 0, ok
//
// The inputs are exact in float32 (multiples of 1/8 below 125, and small
// integers), so the device and the host agree exactly, fused multiply-add
// or not. Without a GPU it says so and exits.
const { gpuProbe, sayProbe } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- The kernel ---

const saxpySource = `
extern "C" __global__ void axpy_f32(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
`;

const a = 2.5;
const xAt = (i) => (i % 1000) / 8;
const yAt = (i) => i % 7;

function saxpyOnDevice(n) {
  const kernel = compileKernel(saxpySource, 'axpy_f32');
  const x = deviceArray(Float32Array.from({ length: n }, (_, i) => xAt(i)));
  const y = deviceArray(Float32Array.from({ length: n }, (_, i) => yAt(i)));
  launchKernel(kernel, { grid: Math.ceil(n / 256), block: 256 }, { f32: a }, x, y, { i32: n });
  return { device: y.device, y: y.toHost() };
}

const n = Number(riot.args[0] ?? 1 << 20);
if (!Number.isInteger(n) || n < 1 || n > 2 ** 31 - 1) {
  throw new RangeError(`gpu-saxpy.js: give N as a positive 32-bit integer, not ${riot.args[0]}`);
}

const probe = gpuProbe();
sayProbe(probe, 'The kernel needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).');
if (probe.count > 0) {
  const { device, y } = riot.waitUntilDone(riot.with({ gpus: 1, noCache: true }).doWork(saxpyOnDevice, n));
  let maxErr = 0;
  for (let i = 0; i < n; i++) {
    maxErr = Math.max(maxErr, Math.abs(y[i] - Math.fround(Math.fround(a * xAt(i)) + yAt(i))));
  }
  console.log(`saxpy on ${n} floats on device ${device}, compiled with NVRTC: max |y - host| = ${maxErr}, ${maxErr === 0 ? 'ok' : 'WRONG'}`);
  if (maxErr !== 0) throw new Error('gpu-saxpy.js: the device and the host disagree');
}
