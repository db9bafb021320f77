// gpu-resources.js: "Each worker's resources", section 1.3.2 of the seed
// (device-resources), as a riot job.
//
//   riot-worker eval scripts/gpu-resources.js
//
// A worker makes its resources once and keeps them for all its batches: one
// stream, on which its batches run in order while other workers' streams
// overlap, and one set of library handles (cuBLAS, cuSOLVER, cuSPARSE, made
// on first use). deviceResources makes new resources on a device. They are
// not the default, currentDeviceResources(device), which the array
// constructors and kernels fall back to without {resources}: the default is
// per runtime and device, and each resources object owns its stream.
//
// The workunit asks for one GPU (riot.with({gpus: 1})); riot.worker.gpus
// lists the device its worker gave it, and deviceResources() and the other
// functions that take a device default to it. On a worker with one GPU it
// prints
//
//   worker local: 1 GPU device (0: NVIDIA H200, 139.8 GiB)
//   > const r = deviceResources({device: deviceForWorker(0)})
//   > String(r)
//   [DeviceResources device 0]
//   > resourcesDevice(r)
//   0
//   > r === currentDeviceResources(0)
//   false
//   > riot.worker.gpus
//   [ 0 ]
//   > resourcesDevice(deviceResources())
//   0
//
// Without a GPU the script says so, and the first step fails:
// RaftError: deviceResources: no device 0 among 0.
const { gpuProbe, sayProbe, session, show } = require('./lib/gpu-common'); // what every gpu-*.js script starts with

// --- Section 1.3.2 ---

// The seed's device-for-worker (gpu-finding.js).
const deviceForWorker = (i) => (deviceCount() > 0 ? i % deviceCount() : 0);

const probe = gpuProbe();
sayProbe(probe, 'The example runs there anyway, without {gpus: 1}, to show what a workunit sees without a device.');
const work = riot.with(probe.count > 0 ? { gpus: 1, noCache: true } : { noCache: true });

show(riot.waitUntilDone(work.doWork(() => {
  let r;
  return session([
    ['const r = deviceResources({device: deviceForWorker(0)})', () => {
      r = deviceResources({ device: deviceForWorker(0) });
    }],
    ['String(r)', () => String(r)],
    ['resourcesDevice(r)', () => resourcesDevice(r)],
    ['r === currentDeviceResources(0)', () => r === currentDeviceResources(0)],
    ['riot.worker.gpus', () => riot.worker.gpus],
    ['resourcesDevice(deviceResources())', () => resourcesDevice(deviceResources())],
  ]);
})));
