/**
 * Why a test is skipped, said where it is decided: `describe.skipIf(skipped(!bin, "the
 * claude CLI is not installed (npm run test:agents installs it)"))`. The reason goes to
 * the file `PHASELOOP_SKIP_LOG` names (scripts/test.mjs sets it), one JSON line per reason and
 * test file, so that the closing lines of `npm test` say why tests did not run.
 */
import { appendFileSync } from "node:fs";
import process from "node:process";

/** `skip` as given, after recording `reason` when it is true. */
export function skipped(skip: boolean, reason: string): boolean {
  if (skip) record(reason);
  return skip;
}

function record(reason: string): void {
  const log = process.env.PHASELOOP_SKIP_LOG;
  if (!log) return;
  try {
    appendFileSync(log, JSON.stringify({ file: callerFile(), reason }) + "\n");
  } catch {
    // the reason is a courtesy: the count of skipped tests is vitest's
  }
}

/** The test file that called `skipped`, relative to the repository (from the call's stack). */
function callerFile(): string {
  const stack = new Error().stack ?? "";
  for (const line of stack.split("\n").slice(1)) {
    const m = /(?:file:\/\/)?(\/[^\s():]+\.test\.ts)/.exec(line);
    if (m) {
      const at = m[1]!.indexOf("/test/");
      return at >= 0 ? m[1]!.slice(at + 1) : m[1]!;
    }
  }
  return "?";
}
