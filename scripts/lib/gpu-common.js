// What every scripts/gpu-*.js job script starts with: ask a worker what
// GPU devices it has, say what was found, and run the seed's REPL sessions
// on a worker. A module of the job (require('./lib/gpu-common')): its
// functions are sent to workers like the script's own.

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

module.exports = { gpuProbe, sayProbe, session, show };
