// gpu-failures.js: "Reporting failed workers", section 1.3.6 of the seed
// (device-resources), as a riot job.
//
//   riot-worker eval scripts/gpu-failures.js
//
// Every GPU failure throws a RaftError, whose kind tells a full GPU
// ('out-of-memory') from a bad call ('logic'). A worker can return it as
// its result; here the second job names a missing GPU. A RaftError would
// travel back to the master as a plain Error (structured clone keeps an
// error's name, message and stack, not its kind), so runWorkerCaught sends
// back what failures needs. On workers with one GPU it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > failures(runWorkers(runWorkerCaught, [[0, batches0], [4, batches1]]))
//   [ [ 1, 'logic', 'deviceResources: no device 4 among 1' ] ]
//
// (On a machine with more than four devices, the missing device is the
// first one past them.) Without a GPU the script says so and runs the jobs
// anyway, without {gpus: 1}: both fail, and both are reported, device 4
// with the same logic error, 'deviceResources: no device 4 among 0'.
const { gpuProbe, sayProbe } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.6 ---

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

function runWorkerCaught(device, batches) {
  try {
    return runWorker(device, batches);
  } catch (e) {
    if (e instanceof RaftError) return { raftError: { kind: e.kind, message: e.message } };
    throw e;
  }
}

const isRaftError = (result) => result !== null && typeof result === 'object' && 'raftError' in result;

function failures(results) {
  return results.flatMap((result, i) =>
    (isRaftError(result) ? [[i, result.raftError.kind, result.raftError.message]] : []));
}

const probe = gpuProbe();
sayProbe(probe, 'The jobs run there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });
const missingDevice = Math.max(4, probe.count);

const [batches0, batches1] = allBatches;
console.log(`> failures(runWorkers(runWorkerCaught, [[0, batches0], [${missingDevice}, batches1]]))`);
console.log(failures(runWorkers(runWorkerCaught, [[0, batches0], [missingDevice, batches1]])));
