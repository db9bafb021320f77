// do-work-eval.js: Riot's do-work/eval example (manual, section 3.6): the
// only kind of workunit that shares no code with the master, just source.
//
//   riot-worker eval scripts/do-work-eval.js
//
// Riot's (wait-until-done (do-work/eval '(+ 3 5))) gives 8; so does this.

console.log(riot.waitUntilDone(riot.doWorkEval('3 + 5')));
