// gpu-fanout.js: the seed's "fanning out" with real work, timed: do
// workunits on one GPU overlap?
//
//   riot-worker eval --tracker HOST scripts/gpu-fanout.js [N [BATCHES]]
//
// A workunit here is one of the seed's workers with real work: BATCHES
// (default 8) batches, each an upload of an N/2×N/4 float32 matrix (N =
// 4096: 2048×1024, 8 MiB), its product with an N/4×N/4 one on the device
// and the download of the result. The workunits ask for no GPU ({gpus}
// would give a one-device worker one at a time) and use the worker's first
// device, each on its own resources (its own stream), as the seed's
// workers on one device do. After a warm-up round, one workunit runs
// alone, then four at once, each timed by the master from submission to
// result; overlap = 4 × one / four is 1 when the four ran one after
// another and up to 4 when they ran fully at once. It needs a worker with
// four free slots (scripts/gpu-check.sh starts one with --slots 4). On a
// GPU it prints something like
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   fan-out on device 0, 8 batches of 2048×1024 · 1024×1024: one workunit 41.0 ms, four at once 70.2 ms, overlap 2.34, check ok
//
// (numbers illustrative). Without a GPU it says so and exits.
const { gpuProbe, sayProbe } = require('./lib/gpu-common');

function fanWorker(n, batches) {
  const rows = Math.max(n / 2, 1), cols = Math.max(n / 4, 1);
  return withDeviceResources(deviceResources(), (r) => {
    const w = deviceArray(new Float32Array(cols * cols).fill(1 / cols), { shape: [cols, cols], resources: r });
    const x = new Float32Array(rows * cols).fill(1);
    let ok = true;
    for (let b = 0; b < batches; b++) {
      const a = deviceArray(x, { shape: [rows, cols], resources: r });
      const y = matMul(a, w);
      const h = y.toHost(); // every element is cols · 1/cols = 1
      ok = ok && Math.abs(h[0] - 1) < 1e-4 && Math.abs(h[h.length - 1] - 1) < 1e-4;
      a.free();
      y.free();
    }
    return { device: r.device, ok };
  });
}

const n = Number(riot.args[0] ?? 4096);
const batches = Number(riot.args[1] ?? 8);
if (!Number.isInteger(n) || n < 4 || !Number.isInteger(batches) || batches < 1) {
  throw new RangeError(`gpu-fanout.js: give N (at least 4) and BATCHES as positive integers, not ${riot.args.join(' ')}`);
}

const probe = gpuProbe();
sayProbe(probe, 'The benchmark needs a device: run it against a worker on a machine with an NVIDIA GPU and driver (docs/gpu.md).');
if (probe.count > 0) {
  const fan = riot.with({ noCache: true });
  /** @param {number} k */
  const round = (k) => {
    const start = performance.now();
    const ids = Array.from({ length: k }, () => fan.doWork(fanWorker, n, batches));
    const results = ids.map((id) => riot.waitUntilDone(id));
    return { ms: performance.now() - start, results };
  };
  round(4); // warm-up: every slot makes its resources, cuBLAS handle and staging buffers
  const one = round(1);
  const four = round(4);
  const ok = [...one.results, ...four.results].every((x) => x.ok);
  console.log(`fan-out on device ${one.results[0].device}, ${batches} batches of ${n / 2}×${n / 4} · ${n / 4}×${n / 4}: ` +
    `one workunit ${one.ms.toFixed(1)} ms, four at once ${four.ms.toFixed(1)} ms, ` +
    `overlap ${((4 * one.ms) / four.ms).toFixed(2)}, check ${ok ? 'ok' : 'FAILED'}`);
  if (!ok) throw new Error('gpu-fanout.js: a product was wrong');
}
