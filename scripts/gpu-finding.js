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
