// failing.js: what a failing workunit looks like (Riot's manual, section 1:
// "If one of the workers throws an exception, the tracker will forward the
// exception to for/work, which will in turn throw an exception with a
// message about which worker caused the problem").
//
//   riot-worker eval scripts/failing.js      # exits with status 1
//
// The first failure is caught and shown; the second is not caught, so the
// script ends with the error, its stack on the master, and the stack of the
// error on the worker ("Caused by").

function parse(row) {
  const n = Number(row);
  if (Number.isNaN(n)) {
    throw new TypeError(`row ${JSON.stringify(row)} is not a number`);
  }
  return n;
}

try {
  riot.forWork(['1', '2', 'three'], parse);
} catch (e) {
  console.log(`caught ${e.name}: ${e.message}`);
  console.log(`  the worker's error: ${e.cause.name}: ${e.cause.message}`);
}

// callWhenDone hears of a failure as Riot's call-when-done does.
riot.callWhenDone(riot.doWork(parse, 'four'), (isError, client, result) => {
  console.log(`callWhenDone: error? ${isError}, from a worker: ${typeof client === 'string'}, message: ${result}`);
  riot.forWork(['5', 'six'], parse); // not caught: the script fails here
});
