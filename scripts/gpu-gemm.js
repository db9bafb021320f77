// gpu-gemm.js: a short matrix-product benchmark on a worker's GPU.
//
//   riot-worker eval scripts/gpu-gemm.js [N [RUNS]]
//
// One workunit, which asks for a GPU (riot.with({gpus: 1})), fills two N×N
// matrices (default N = 4096) on the device, then for float32 and float64
// runs matMul (cuBLAS gemm) once to warm up (it makes the cuBLAS handle)
// and RUNS more times (default 5), each timed from the call to the end of
// resourcesSync, and reports the best as TFLOP/s (2·N³ flops per product).
// It checks the product: A is all ones and B all twos, so every element of
// A·B is 2N, exactly. On an H200 it prints something like
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   matMul 4096×4096 on device 0 (NVIDIA H200), best of 5:
//   float32: 51.3 TFLOP/s (2.68 ms), check ok
//   float64: 48.9 TFLOP/s (2.81 ms), check ok
//
// (numbers illustrative; scripts/gpu-check.sh records real ones). Without a
// GPU it says so and exits: there is nothing to measure.
const { gpuProbe, sayProbe } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- The benchmark ---

function benchGemm(n, runs) {
  const device = riot.worker.gpus[0];
  /** @type {{device: number, name: string, results: {dtype: string, ms: number, tflops: number, ok: boolean}[]}} */
  const out = { device, name: deviceInfo(device).name, results: [] };
  withDeviceResources(deviceResources(), (r) => {
    for (const dtype of ['float32', 'float64']) {
      const Typed = dtype === 'float32' ? Float32Array : Float64Array;
      const a = deviceArray(new Typed(n * n).fill(1), { shape: [n, n], resources: r });
      const b = deviceArray(new Typed(n * n).fill(2), { shape: [n, n], resources: r });
      const warm = matMul(a, b);
      const c = warm.toHost();
      // Every element is 2n; look at the corners, the diagonal and a stride.
      let ok = true;
      for (let i = 0; i < n * n; i += (n + 1) * Math.max(1, Math.floor(n / 64))) ok = ok && c[i] === 2 * n;
      ok = ok && c[0] === 2 * n && c[n - 1] === 2 * n && c[n * n - n] === 2 * n && c[n * n - 1] === 2 * n;
      warm.free();
      let best = Infinity;
      for (let k = 0; k < runs; k++) {
        const start = performance.now();
        const p = matMul(a, b);
        resourcesSync(r);
        best = Math.min(best, performance.now() - start);
        p.free();
      }
      a.free();
      b.free();
      out.results.push({ dtype, ms: best, tflops: (2 * n ** 3) / (best / 1e3) / 1e12, ok });
    }
  });
  return out;
}

const n = Number(riot.args[0] ?? 4096);
const runs = Number(riot.args[1] ?? 5);
if (!Number.isInteger(n) || n < 1 || !Number.isInteger(runs) || runs < 1) {
  throw new RangeError(`gpu-gemm.js: give N and RUNS as positive integers, not ${riot.args.join(' ')}`);
}

const probe = gpuProbe();
sayProbe(probe, 'The benchmark needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).');
if (probe.count > 0) {
  const res = riot.waitUntilDone(riot.with({ gpus: 1, noCache: true }).doWork(benchGemm, n, runs));
  console.log(`matMul ${n}×${n} on device ${res.device} (${res.name}), best of ${runs}:`);
  for (const { dtype, ms, tflops, ok } of res.results) {
    console.log(`${dtype}: ${tflops.toPrecision(3)} TFLOP/s (${ms.toPrecision(3)} ms), check ${ok ? 'ok' : 'FAILED'}`);
  }
  if (res.results.some((x) => !x.ok)) throw new Error('gpu-gemm.js: a product was wrong');
}
