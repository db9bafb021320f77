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
// --- What every gpu-*.js script starts with ---

// gpuProbe asks a worker what GPU devices it has: a workunit without
// {gpus}, so that any worker takes it, and with noCache, so that the answer
// is today's and not one the tracker remembers.
function gpuProbe() {
  return riot.waitUntilDone(riot.with({ noCache: true }).doWork(() => {
    const count = deviceCount();
    const devices = Array.from({ length: count }, (_, i) => {
      const d = deviceInfo(i);
      return `${i}: ${d.name}, ${(d.totalMemory / 2 ** 30).toFixed(1)} GiB`;
    });
    let why = '';
    if (count === 0) {
      try {
        deviceInfo(0);
      } catch (e) {
        why = e.message.replace(/^deviceInfo: no device 0 among 0(: )?/, '');
      }
    }
    return { worker: riot.worker.name, count, devices, why };
  }));
}

// sayProbe prints what the probe found; without a device it says so
// plainly, then what the script does about it.
function sayProbe(probe, without) {
  if (probe.count > 0) {
    console.log(`worker ${probe.worker}: ${probe.count} GPU device${probe.count === 1 ? '' : 's'} (${probe.devices.join('; ')})`);
  } else {
    console.log(`No GPU: worker ${probe.worker} has no GPU devices${probe.why ? ` (${probe.why})` : ''}.`);
    console.log(without);
  }
}

// session runs steps on a worker as the seed's REPL session runs them: each
// step is [expression, thunk]; it returns [expression, value] pairs, and at
// the first step that throws, that step with the error's name and message,
// and stops. show prints them on the master as the seed shows them.
function session(steps) {
  const out = [];
  for (const [expr, thunk] of steps) {
    try {
      out.push([expr, thunk()]);
    } catch (e) {
      out.push([expr, `${e.name}: ${e.message}`]);
      break;
    }
  }
  return out;
}

function show(lines) {
  for (const [expr, value] of lines) {
    console.log(`> ${expr}`);
    if (value !== undefined) console.log(value);
  }
}

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
