import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import process from "node:process";

export interface ProcessSpec {
  /** argv (no shell), or a string run by `sh -c`. */
  command: string[] | string;
  cwd: string;
  env: Record<string, string | undefined>;
  /** Text written to stdin, then closed. Without it stdin is closed from the start. */
  stdin?: string;
  timeoutMs?: number;
  /** Kill when neither stdout nor stderr printed anything for this long. */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  stdoutFile?: string;
  stderrFile?: string;
  onLine?: (stream: "stdout" | "stderr", line: string) => void;
  /** Grace period between SIGTERM and SIGKILL. Default 2 s. */
  killGraceMs?: number;
}

/** A finished process, whatever happened: failures are results, not exceptions. */
export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  idleTimedOut: boolean;
  aborted: boolean;
  /** The program could not be started ("command not found: x"). */
  spawnError?: string;
  durationMs: number;
  /** stdout, capped (the beginning is kept up to STDOUT_CAP, then the tail). */
  stdout: string;
  stdoutTail: string;
  stderrTail: string;
  /** Whether anything was written to stdoutFile or stderrFile (they are created on first output). */
  wroteLogs: boolean;
  pid?: number;
}

const STDOUT_CAP = 4 * 1024 * 1024;
const TAIL_CAP = 64 * 1024;

/** Appends text while keeping only the last `cap` characters. */
class Tail {
  private text = "";
  private readonly cap: number;
  constructor(cap: number) {
    this.cap = cap;
  }
  push(chunk: string): void {
    this.text += chunk;
    if (this.text.length > this.cap * 2) this.text = this.text.slice(-this.cap);
  }
  value(): string {
    return this.text.length > this.cap ? this.text.slice(-this.cap) : this.text;
  }
}

class LineSplitter {
  private partial = "";
  private readonly emit: (line: string) => void;
  constructor(emit: (line: string) => void) {
    this.emit = emit;
  }
  push(chunk: string): void {
    const text = this.partial + chunk;
    const lines = text.split("\n");
    this.partial = lines.pop() ?? "";
    for (const l of lines) this.emit(l.replace(/\r$/, ""));
  }
  flush(): void {
    if (this.partial !== "") this.emit(this.partial);
    this.partial = "";
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * Run a process in its own process group and wait for it. Timeouts, idle
 * timeouts and aborts kill the whole group (SIGTERM, then SIGKILL).
 */
export function runProcess(spec: ProcessSpec): Promise<ProcessResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const argv = typeof spec.command === "string" ? ["sh", "-c", spec.command] : spec.command;
    const stdoutTail = new Tail(TAIL_CAP);
    const stderrTail = new Tail(TAIL_CAP);
    let stdout = "";
    let stdoutTruncated = false;
    let timedOut = false;
    let idleTimedOut = false;
    let aborted = false;
    let settled = false;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    let wallTimer: ReturnType<typeof setTimeout> | undefined;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const files: WriteStream[] = [];
    // log files are opened on the first output: a silent phase costs no file
    const lazyFile = (path: string | undefined) => {
      let stream: WriteStream | undefined;
      return (chunk: string) => {
        if (!path) return;
        if (!stream) {
          mkdirSync(dirname(path), { recursive: true });
          stream = createWriteStream(path, { flags: "a" });
          files.push(stream);
        }
        stream.write(chunk);
      };
    };
    const outFile = lazyFile(spec.stdoutFile);
    const errFile = lazyFile(spec.stderrFile);

    const finish = (partial: Partial<ProcessResult>) => {
      if (settled) return;
      settled = true;
      clearTimeout(wallTimer);
      clearTimeout(idleTimer);
      clearTimeout(killTimer);
      spec.signal?.removeEventListener("abort", onAbort);
      outLines.flush();
      errLines.flush();
      let pending = files.length;
      const done = () =>
        resolve({
          exitCode: null,
          signal: null,
          timedOut,
          idleTimedOut,
          aborted,
          durationMs: Date.now() - started,
          stdout: stdoutTruncated ? stdout + "\n…\n" + stdoutTail.value() : stdout,
          stdoutTail: stdoutTail.value(),
          stderrTail: stderrTail.value(),
          wroteLogs: files.length > 0,
          pid: child.pid,
          ...partial,
        });
      if (pending === 0) return done();
      for (const f of files) f.end(() => --pending === 0 && done());
    };

    const outLines = new LineSplitter((l) => spec.onLine?.("stdout", l));
    const errLines = new LineSplitter((l) => spec.onLine?.("stderr", l));

    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: spec.cwd,
      env: spec.env as NodeJS.ProcessEnv,
      stdio: [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
    });

    const stop = () => {
      killGroup(child.pid, "SIGTERM");
      killTimer = setTimeout(() => killGroup(child.pid, "SIGKILL"), spec.killGraceMs ?? 2000);
    };
    const onAbort = () => {
      aborted = true;
      stop();
    };
    const armIdle = () => {
      if (!spec.idleTimeoutMs) return;
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        idleTimedOut = true;
        stop();
      }, spec.idleTimeoutMs);
    };

    child.on("error", (error: NodeJS.ErrnoException) => {
      const message = error.code === "ENOENT" ? `command not found: ${argv[0]}` : error.message;
      finish({ spawnError: message, exitCode: null });
    });
    if (spec.signal?.aborted) onAbort();
    spec.signal?.addEventListener("abort", onAbort);
    if (spec.timeoutMs) {
      wallTimer = setTimeout(() => {
        timedOut = true;
        stop();
      }, spec.timeoutMs);
    }
    armIdle();

    child.stdout!.setEncoding("utf8");
    child.stderr!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      armIdle();
      outFile(chunk);
      stdoutTail.push(chunk);
      if (stdout.length < STDOUT_CAP) stdout += chunk;
      else stdoutTruncated = true;
      outLines.push(chunk);
    });
    child.stderr!.on("data", (chunk: string) => {
      armIdle();
      errFile(chunk);
      stderrTail.push(chunk);
      errLines.push(chunk);
    });
    if (spec.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {
        // the program may exit without reading its stdin
      });
      child.stdin.end(spec.stdin);
    }
    child.on("close", (code, signal) => {
      // make sure nothing of the group outlives a killed phase
      if (timedOut || idleTimedOut || aborted) killGroup(child.pid, "SIGKILL");
      finish({ exitCode: code, signal: signal ?? null });
    });
  });
}
