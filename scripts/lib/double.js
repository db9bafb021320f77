// The module that scripts/do-work-call.js calls on its workers.
exports.double = (x) => x * 2;
