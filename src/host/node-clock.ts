/** The real host's clock: the system's time, timers and setImmediate. */
import type { HostClock } from "./host.ts";

export const nodeClock: HostClock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolveSleep) => {
      if (signal?.aborted) return resolveSleep();
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal?.removeEventListener("abort", done);
        resolveSleep();
      }
      signal?.addEventListener("abort", done);
    }),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
  defer: (fn) => void setImmediate(fn),
};

