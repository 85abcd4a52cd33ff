/**
 * A fake clock for tests: time moves only when told (`advance`) or by what a
 * `sleep` asks for, and timers fire as it passes them, in order.
 */
import type { HostClock } from "./host.ts";
import { HostCrash } from "./host-crash.ts";

/** Where a fake clock starts unless told: 2026-01-01 12:00 UTC. */
export const START = Date.UTC(2026, 0, 1, 12, 0, 0);

/** A fake clock: `now` moves by `advance` and by the time each `sleep` asks for; timers fire as it passes them. */
export class FakeClock implements HostClock {
  private t: number;
  private mono = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  private nextTimer = 1;
  constructor(start = START) {
    this.t = start;
  }
  now(): number {
    return this.t;
  }
  monotonic(): number {
    return this.mono;
  }
  advance(ms: number): void {
    const until = this.mono + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, x]) => x.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.t += due[1].at - this.mono;
      this.mono = due[1].at;
      due[1].fn();
    }
    this.t += until - this.mono;
    this.mono = until;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!signal?.aborted) this.advance(ms);
    return new Promise((done) => setImmediate(done));
  }
  setTimer(fn: () => void, ms: number): unknown {
    const id = this.nextTimer++;
    this.timers.set(id, { at: this.mono + ms, fn });
    return id;
  }
  clearTimer(timer: unknown): void {
    this.timers.delete(timer as number);
  }
  defer(fn: () => void): void {
    setImmediate(() => {
      try {
        fn();
      } catch (error) {
        // a write after the injected crash: the process is gone, nothing more happens
        if (!(error instanceof HostCrash)) throw error;
      }
    });
  }
}
