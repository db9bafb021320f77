// simple-demo.js: the first example of Riot's manual (section 1), in riot.
//
//   riot-worker eval scripts/simple-demo.js
//
// riot.forWork acts like Array.from(items).map(fn), but runs in parallel:
// each call of fn is a workunit, evaluated by a worker. Ten workunits sleep
// 3 s each: with ten worker slots the job takes about 3 s (--workers 10 on
// the embedded default), with two slots about 15 s.

function run() {
  return riot.forWork(Array.from({ length: 10 }, (_, i) => i), (i) => {
    sleep(3); // or some big task
    return 10 * i;
  });
}

console.log(run());
console.log('Complete');
