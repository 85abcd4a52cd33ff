/**
 * How a run is stopped from outside: SIGINT, SIGTERM and SIGHUP (a closed
 * terminal) abort it; the phase's process group is stopped, the checkpoint
 * written, exit 130. A Ctrl-C at the terminal and `stopRun` (which sends
 * SIGINT) both arrive here. Phases run in groups of their own, so without
 * this a closed terminal would leave them running.
 */
import process from "node:process";

export function interruptSignal(): { signal: AbortSignal; dispose: () => void } {
  const ac = new AbortController();
  let count = 0;
  const handler = (sig: NodeJS.Signals) => {
    count += 1;
    if (count > 2) process.exit(130); // a third Ctrl-C: leave now
    ac.abort(sig);
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  process.on("SIGHUP", handler);
  return {
    signal: ac.signal,
    dispose: () => {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
      process.off("SIGHUP", handler);
    },
  };
}
