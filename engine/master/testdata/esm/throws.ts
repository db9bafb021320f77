import { area, type Shape } from './lib/shapes';

const bad: Shape = { kind: 'square', size: -1 };
console.log(riot.waitUntilDone(riot.doWork(area, bad)));
