/**
 * Asking at a terminal: the question is shown by the reporter (a
 * `question.asked` event in the live view); the answer is the next line typed
 * on stdin. Only a run whose reporter is the live view and whose stdin is a
 * terminal asks this way; any other run waits for `resume --answer`.
 */
import process from "node:process";
import { createInterface } from "node:readline";
import type { Asker } from "./ask-question.ts";

export function terminalAsker(): Asker {
  return (q, signal) =>
    new Promise((resolveAnswer) => {
      if (signal.aborted) return resolveAnswer(undefined);
      const rl = createInterface({ input: process.stdin, terminal: false });
      let timer: ReturnType<typeof setTimeout> | undefined;
      let settled = false;
      const done = (answer: string | null | undefined) => {
        // closing the interface emits "close": the first answer wins
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        rl.close();
        resolveAnswer(answer);
      };
      const onAbort = () => done(undefined);
      signal.addEventListener("abort", onAbort);
      if (q.timeoutMs > 0) timer = setTimeout(() => done(null), q.timeoutMs);
      rl.once("line", (line) => done(line));
      rl.once("close", () => done(undefined));
    });
}

/** Whether this run can ask at the terminal: the live view is drawn and stdin is a terminal. */
export function canAskAtTerminal(liveView: boolean): boolean {
  return liveView && process.stdin.isTTY === true;
}
