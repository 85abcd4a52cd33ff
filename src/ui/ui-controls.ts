/**
 * The page's controls as the CLI performs them: stop is Ctrl-C sent to the
 * process that holds the run's lock (it saves its state and exits 130);
 * answer and resume start `phaseloop resume` in the background, detached from
 * the server, so a run goes on whether or not the page stays open.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { isProcessAlive } from "../runtime/run-lock.ts";
import { readLock } from "../reporters/run-log.ts";
import type { ControlResult, RunControls } from "./controls.ts";

export function uiControls(workdir: string, cli: { command: string; args: string[] } = selfCommand()): RunControls {
  const resume = async (runId: string, extra: string[]): Promise<ControlResult> => {
    const lock = await readLock(workdir);
    if (lock?.pid && isProcessAlive(lock.pid)) return { ok: false, message: `run ${lock.run ?? "?"} is running in this workdir; one run at a time` };
    const child = spawn(cli.command, [...cli.args, "resume", runId, "--workdir", workdir, "--reporter", "plain", ...extra], { cwd: workdir, detached: true, stdio: "ignore", env: { ...process.env, CI: "true" } });
    child.unref();
    return { ok: true, message: extra.length > 0 ? `answered; run ${runId} goes on` : `run ${runId} resumed` };
  };
  return {
    async stopRun(runId) {
      const lock = await readLock(workdir);
      if (lock === null || lock.run !== runId || lock.pid === null || !isProcessAlive(lock.pid)) return { ok: false, message: `run ${runId} is not running` };
      process.kill(lock.pid, "SIGINT");
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (!isProcessAlive(lock.pid)) return { ok: true, message: `run ${runId} stopped; its state is saved (resume it here or with phaseloop resume ${runId})` };
      }
      return { ok: true, message: `run ${runId} was asked to stop; it is saving its state` };
    },
    answerQuestion: (runId, answer) => resume(runId, ["--answer", answer]),
    resumeRun: (runId) => resume(runId, []),
  };
}

function selfCommand(): { command: string; args: string[] } {
  return { command: process.execPath, args: process.argv[1] ? [process.argv[1]] : [] };
}
