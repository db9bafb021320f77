// first-wins.js: hedged work with riot.cancel. The same answer is sought
// three ways at once; the first to finish wins, and the others, waiting or
// running, are canceled so that their workers move on.
//
//   riot-worker eval --workers 3 scripts/first-wins.js
//
// prints "quick guess won; canceled 2 others".

const strategies = [
  { name: 'slow scan', seconds: 3 },
  { name: 'quick guess', seconds: 0.1 },
  { name: 'middling', seconds: 1.5 },
];

const ids = strategies.map((s) =>
  riot.doWork((s) => {
    sleep(s.seconds); // or some search that takes this long
    return s.name;
  }, s));

let winner;
for (const id of ids) {
  riot.callWhenDone(id, (isError, worker, result) => {
    if (isError || winner !== undefined) {
      return; // a canceled one, or a late one
    }
    winner = result;
    const canceled = riot.cancel(ids.filter((other) => other !== id));
    console.log(`${winner} won; canceled ${canceled.length} others`);
  });
}
