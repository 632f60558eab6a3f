// Human-readable figures: decimal SI prefixes, as vendors quote bandwidth and FLOP/s.

const PREFIXES: Array<[number, string]> = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];

export function si(value: number, unit: string, digits = 3): string {
  if (!Number.isFinite(value)) return '–';
  const a = Math.abs(value);
  for (const [scale, p] of PREFIXES) {
    if (a >= scale) return `${Number((value / scale).toPrecision(digits))} ${p}${unit}`;
  }
  return `${Number(value.toPrecision(digits))} ${unit}`.trimEnd();
}

export const bytes = (b: number) => si(b, 'B');
export const flops = (f: number) => si(f, 'FLOP');
export const flopsPerS = (f: number) => si(f, 'FLOP/s');

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return '–';
  if (s >= 1) return `${s.toPrecision(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toPrecision(3)} ms`;
  if (s >= 1e-6) return `${(s * 1e6).toPrecision(3)} µs`;
  return `${(s * 1e9).toPrecision(3)} ns`;
}

export function count(n: number): string {
  return n >= 1e4 ? si(n, '') : String(Math.round(n * 100) / 100);
}

/** A count of things: "1 client", "64 clients". */
export const counted = (n: number, thing: string) => `${n} ${thing}${n === 1 ? '' : 's'}`;

export function tokens(n: number): string {
  return n >= 1024 && n % 1024 === 0 ? `${n / 1024}K` : String(n);
}

export function pct(x: number, digits = 1): string {
  return `${x.toFixed(digits)}%`;
}

/** Escapes text for innerHTML. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]!));
}
