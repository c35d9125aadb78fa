/** Runs `scan` every `periodMs`, the next one only after the last has ended; returns a stop function. */
export function everyPeriod(scan: () => Promise<void>, periodMs: number): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const loop = (): void => {
    timer = setTimeout(() => void scan().finally(() => !stopped && loop()), periodMs);
  };
  loop();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
