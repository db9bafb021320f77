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
