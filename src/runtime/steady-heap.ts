/**
 * A long run keeps a steady footprint. V8 grows its young generation (up to
 * 2 × 16 MB) as objects survive collections; a loop that spawns thousands of
 * processes, or a phase that prints gigabytes, gets there only after a while,
 * so the process grows for seconds or minutes into the run, and a larger heap
 * also makes every fork() slower. Keeping the young generation at the size it
 * has at startup costs no measurable time (what survives a collection in a
 * loop is small) and holds the resident size flat.
 */
import { setFlagsFromString } from "node:v8";

export function keepHeapSteady(): void {
  try {
    // read by V8 each time it grows the young generation; a factor of 1 keeps its size
    setFlagsFromString("--semi-space-growth-factor=1");
  } catch {
    // a runtime without V8 flags keeps its own policy
  }
}
