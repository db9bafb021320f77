import leftpad from 'leftpad';
import { area, type Shape } from './lib/shapes';

const shapes: Shape[] = [
  { kind: 'square', size: 3 },
  { kind: 'circle', size: 1 },
];
const areas: number[] = riot.forWork(shapes, (s: Shape) => area(s));
await Promise.resolve();
console.log(areas.map((a) => leftpad(a, 4, '.')).join(' '));
