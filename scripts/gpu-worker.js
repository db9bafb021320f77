// gpu-worker.js: "A worker", section 1.3.4 of the seed (device-resources),
// as a riot job.
//
//   riot-worker eval scripts/gpu-worker.js
//
// A worker makes its resources with withDeviceResources and times each
// batch on them. withDeviceResources releases the resources when the
// function returns or throws: a clear end for what the collector cannot
// see, a CUDA stream and the cuBLAS, cuSOLVER and cuSPARSE handles made on
// first use. (A finalizer would release them too, once unreachable, and
// logs a warning when it has to.) On a worker with a GPU it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first)
//   [ 2, 1 ]
//
// Without a GPU the script says so, and the step fails:
// RaftError: deviceResources: no device 0 among 0.
const { gpuProbe, sayProbe, session, show } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.4 ---

function processBatch(rows) {
  for (const row of rows) {
    if (row.length !== 2) {
      throw new Error(`processBatch: row ${JSON.stringify(row)} has ${row.length} columns`);
    }
  }
  return rows.length;
}

function timed(r, thunk) {
  const start = performance.now();
  const result = thunk();
  resourcesSync(r);
  return [result, performance.now() - start];
}

function runWorker(device, batches) {
  return withDeviceResources(deviceResources({ device }), (r) =>
    batches.map((rows) => timed(r, () => processBatch(rows))));
}

const first = (list) => list[0];

const probe = gpuProbe();
sayProbe(probe, 'The example runs there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });

show(riot.waitUntilDone(work.doWork(() => session([
  ['runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first)',
    () => runWorker(0, [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]]).map(first)],
]))));
