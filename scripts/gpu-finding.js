// gpu-finding.js: "Finding the GPU", section 1.3.1 of the seed
// (device-resources), as a riot job.
//
//   riot-worker eval scripts/gpu-finding.js
//   riot-worker eval --tracker HOST scripts/gpu-finding.js
//
// deviceCount() is the number of devices a worker sees, numbered from 0.
// The seed hands workers out over them round robin with deviceForWorker; in
// riot a worker does that itself for workunits that ask for a GPU
// (riot.with({gpus: 1})): it gives each the next free device, and
// riot.worker.gpus says which.
//
// On a worker with one GPU it prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > deviceCount()
//   1
//   > [0, 1, 2, 3].map(deviceForWorker)
//   [ 0, 0, 0, 0 ]
//   > deviceResources({device: 4})
//   RaftError: deviceResources: no device 4 among 1
//
// A device the driver does not report throws a RaftError of kind 'logic',
// named after the function called. (On a machine with more than four
// devices, the missing device is the first one past them.) Without a GPU
// the script says so and runs the same workunit anyway, without
// {gpus: 1}: deviceCount() is 0 and every device is missing.
const { gpuProbe, sayProbe, session, show } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.1 ---

// The seed's device-for-worker. Without devices it gives 0 (i % 0 is NaN),
// so that deviceResources says plainly that there is no device 0.
const deviceForWorker = (i) => (deviceCount() > 0 ? i % deviceCount() : 0);

const probe = gpuProbe();
sayProbe(probe, 'The examples run there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });
const missingDevice = Math.max(4, probe.count);

show(riot.waitUntilDone(work.doWork(() => session([
  ['deviceCount()', () => deviceCount()],
  ['[0, 1, 2, 3].map(deviceForWorker)', () => [0, 1, 2, 3].map(deviceForWorker)],
  [`deviceResources({device: ${missingDevice}})`, () => deviceResources({ device: missingDevice })],
]))));
