/**
 * A seeded random stream (mulberry32: 32-bit state, good enough to place
 * faults and pick specs, and tiny). One seed gives the same plan, host specs
 * and fault-proxy draws on every run; which request meets which draw still
 * depends on timing, so a rerun repeats the plan, not every byte.
 */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return Math.floor(this.between(min, max + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** `n` hex digits. */
  hex(n: number): string {
    let s = '';
    while (s.length < n) s += Math.floor(this.next() * 16).toString(16);
    return s;
  }

  /** An independent stream for one purpose, so adding draws to one leaves the others as they were. */
  fork(label: string): Random {
    let h = this.seed ^ 0x9e3779b9;
    for (const c of label) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
    return new Random(h >>> 0);
  }
}

export const randomSeed = (): number => Math.floor(Math.random() * 2 ** 32);
