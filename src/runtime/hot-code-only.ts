/**
 * A loop runs the same few hundred functions once per phase, thousands of
 * times. V8 optimises a function once it has run a budget of its bytecode
 * (66 KB by default), so in a loop of short phases its optimising compiler
 * keeps working: in 1,000 iterations of `true`, about 100 compilations and
 * 0.9 s of a background thread, spread over the whole run. On a machine with
 * few cores that thread competes with the phase's processes, and `fork()`,
 * which copies the address space, waits for it. With a budget eight times
 * larger, what the loop runs only once per phase is left to the baseline
 * compilers, while code that does real work (reading 100 MB of output,
 * listing a large tree) still reaches the budget within milliseconds and is
 * optimised as before: 14 compilations and 50 ms in the same run.
 */
import process from "node:process";
import { setFlagsFromString } from "node:v8";

const BUDGET = 8 * 67_584;

/** V8 12 (Node 22) counts invocations instead and has no such flag: setting it only prints an error. */
const HAS_INTERRUPT_BUDGET = Number(process.versions.v8?.split(".")[0]) < 12;

export function optimizeHotCodeOnly(): void {
  if (!HAS_INTERRUPT_BUDGET) return;
  try {
    setFlagsFromString(`--interrupt-budget=${BUDGET}`);
  } catch {
    // a runtime without V8's flags keeps its own policy
  }
}
