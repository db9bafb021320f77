// do-work-call.js: Riot's do-work/call example (manual, section 3.6).
//
//   riot-worker eval scripts/do-work-call.js
//
// riot.doWorkCall(modulePath, exportName, ...args) calls an exported
// function of a CommonJS module on a worker. The master reads the module
// (and every module it requires) and ships it by content hash: workers need
// no copy, and a changed file can never give results from the old code.

function run() {
  const runningWorkunits = [];
  for (let x = 0; x < 10; x++) {
    runningWorkunits.push(riot.doWorkCall('lib/double.js', 'double', x));
  }
  return runningWorkunits.map(riot.waitUntilDone);
}

console.log(run());
