/**
 * A long run keeps a steady footprint. Left to itself, V8 grows its young
 * generation (up to 2 × 16 MB) as objects survive collections, and lets the
 * old generation fill with what a loop leaves behind (history entries live
 * for twenty iterations, long enough to be promoted) up to a limit that it
 * raises as it goes: the process grows for minutes into a run, and in
 * sawteeth of 15 MB after that. A bigger process also forks more slowly, and
 * a loop forks at every phase. So for a run:
 *
 * - the young generation keeps the size it has when the run starts: its
 *   collections are more frequent but cheap, since little of an iteration
 *   survives one;
 * - V8 collects the old generation itself, incrementally, with pauses of
 *   about a millisecond; should it let the old generation hold OLD_SLACK
 *   more than after the last collection, a full collection is forced. The
 *   slack is wide enough that V8's own collections come first: a forced
 *   collection is several times dearer (4-6 ms, all at once), and it throws
 *   away optimised code whose embedded objects died, which V8 then compiles
 *   again. With a 4 MB slack, forced collections every 0.75 s of a loop of
 *   `true` cost 23 full collections (120 ms) and 196 deoptimisations in
 *   10,000 iterations; with 16 MB, 13 collections (22 ms) and 2.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const OLD_SLACK = 16 * 1024 * 1024;
const CHECK_MS = 250;

export function keepHeapSteady(): void {
  try {
    // V8 reads the factor each time it grows the young generation: 1 keeps its size
    setFlagsFromString("--semi-space-growth-factor=1");
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const oldUsed = () => getHeapSpaceStatistics().find((s) => s.space_name === "old_space")?.space_used_size ?? 0;
    let after = oldUsed();
    const timer = setInterval(() => {
      if (oldUsed() < after + OLD_SLACK) return;
      gc();
      after = oldUsed();
    }, CHECK_MS);
    timer.unref();
  } catch {
    // a runtime without V8's flags keeps its own policy
  }
}
