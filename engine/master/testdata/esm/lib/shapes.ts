export interface Shape {
  kind: 'square' | 'circle';
  size: number;
}

// area is sent to workers by content, like the script's own functions.
export function area(s: Shape): number {
  if (s.size < 0) {
    throw new RangeError(`negative size ${s.size}`);
  }
  return s.kind === 'square' ? s.size * s.size : Math.round(Math.PI * s.size * s.size);
}
