// gpu-timing.js: "Timing a batch", section 1.3.3 of the seed
// (device-resources), as a riot job.
//
//   riot-worker eval scripts/gpu-timing.js
//
// Operations return once queued. Timing a batch means calling
// resourcesSync(r) before reading the clock; otherwise it times only the
// queueing. resourcesSync polls rather than blocking its OS thread, so other
// workunits keep running, and the workunit's time limit or an interrupt
// ends the wait. The milliseconds differ from run to run, so the example
// shows the rows and only whether a time came back. On a worker with a GPU
// it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > const r = deviceResources({device: deviceForWorker(0)})
//   > const [rows, ms] = timed(r, () => processBatch([[1.0, 2.0], [3.0, 4.0]]))
//   > [rows, typeof ms === 'number']
//   [ 2, true ]
//
// Without a GPU the script says so, and the first step fails:
// RaftError: deviceResources: no device 0 among 0.
const { gpuProbe, sayProbe, session, show } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.3 ---

// The seed's device-for-worker (gpu-finding.js).
const deviceForWorker = (i) => (deviceCount() > 0 ? i % deviceCount() : 0);

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

const probe = gpuProbe();
sayProbe(probe, 'The example runs there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });

show(riot.waitUntilDone(work.doWork(() => {
  let r, rows, ms;
  return session([
    ['const r = deviceResources({device: deviceForWorker(0)})', () => {
      r = deviceResources({ device: deviceForWorker(0) });
    }],
    ['const [rows, ms] = timed(r, () => processBatch([[1.0, 2.0], [3.0, 4.0]]))', () => {
      [rows, ms] = timed(r, () => processBatch([[1.0, 2.0], [3.0, 4.0]]));
    }],
    ["[rows, typeof ms === 'number']", () => [rows, typeof ms === 'number']],
  ]);
})));
