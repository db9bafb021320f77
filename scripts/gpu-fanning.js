// gpu-fanning.js: "Fanning out", section 1.3.5 of the seed
// (device-resources), as a riot job.
//
//   riot-worker eval scripts/gpu-fanning.js
//
// Each of the seed's workers runs in its own thread and queues on its own
// stream; here each is a workunit submitted with riot.with({gpus: 1}), which
// the tracker gives only to a worker with a free GPU, and which runs there
// on its own stream. Jobs name no device: the worker gives each workunit
// one, round robin, and deviceResources() defaults to it. On workers with
// GPUs it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > report(runWorkers(runWorker, jobs))
//   worker 0: 2 rows
//   worker 0: 1 rows
//   worker 1: 1 rows
//   worker 2: 2 rows
//
// ("worker i" is the i-th job.) Without a GPU the script says so and runs
// the jobs anyway, without {gpus: 1}: the first one fails, and its error
// ends the fan-out, as in the seed:
// RaftError: deviceResources: no device 0 among 0.
const { gpuProbe, sayProbe } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.5 ---

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

// A worker (gpu-worker.js). A device of undefined is the one the riot
// worker gave the workunit.
function runWorker(device, batches) {
  return withDeviceResources(deviceResources({ device }), (r) =>
    batches.map((rows) => timed(r, () => processBatch(rows))));
}

// Each of the seed's workers is a workunit that asks for one GPU: the
// tracker gives it to a worker with a free device, and that worker gives it
// one, round robin, as deviceForWorker does (riot.worker.gpus).
// riot.waitUntilDone returns a workunit's result or rethrows its error, as
// the seed's thunks do, so the first failed job ends runWorkers. A worker
// that dies without answering is the tracker's to notice: it gives the
// workunit to another worker, and after too many losses fails it with a
// WorkunitError of kind 'workers-lost' that names them (the seed's
// worker-died).
function runWorkers(worker, jobs) {
  const ids = jobs.map(([device, batches]) => work.doWork(worker, device, batches));
  return ids.map((id) => riot.waitUntilDone(id));
}

const allBatches = [
  [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0]]],
  [[[7.0, 8.0]]],
  [[[9.0, 10.0], [11.0, 12.0]]],
];

function report(results) {
  results.forEach((batches, i) => {
    for (const [n] of batches) console.log(`worker ${i}: ${n} rows`);
  });
}

const probe = gpuProbe();
sayProbe(probe, 'The jobs run there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });

const jobs = allBatches.map((batches) => [undefined, batches]);
console.log('> report(runWorkers(runWorker, jobs))');
try {
  report(runWorkers(runWorker, jobs));
} catch (e) {
  // A WorkunitError: its cause is the error the workunit threw.
  if (e.name !== 'WorkunitError' || probe.count > 0) throw e;
  console.log(`${e.cause.name}: ${e.cause.message}`);
}
