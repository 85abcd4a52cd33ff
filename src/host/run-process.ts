import { spawn } from "node:child_process";
import { accessSync, closeSync, constants, createWriteStream, mkdirSync, openSync, type WriteStream } from "node:fs";
import { fd3Launch } from "./fd-launch.ts";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { killPhaseProcesses, LEFTOVER_MARK, liveRoots } from "./orphans.ts";
import { OWN_PROGRAMS, ownProgram } from "./own-programs.ts";
import { StringDecoder } from "node:string_decoder";
import process from "node:process";
import type { ProcessResult, ProcessSpec } from "./host.ts";

export type { ProcessResult, ProcessSpec };

const STDOUT_CAP = 4 * 1024 * 1024;
const TAIL_CAP = 64 * 1024;
/** How much output may wait for a log file before reading pauses. */
const LOG_BUFFER = 256 * 1024;
/** The longest line handed to onLine, in characters. */
const LINE_CAP = 4 * 1024 * 1024;

/**
 * Appends text while keeping only the last `cap` characters. The chunks are
 * kept as they come and joined only when read: cutting a string on every
 * push would copy it each time.
 */
class Tail {
  private chunks: string[] = [];
  private length = 0;
  private readonly cap: number;
  constructor(cap: number) {
    this.cap = cap;
  }
  push(chunk: string): void {
    if (chunk === "") return;
    this.chunks.push(chunk);
    this.length += chunk.length;
    while (this.length - this.chunks[0]!.length >= this.cap) this.length -= this.chunks.shift()!.length;
  }
  value(): string {
    const text = this.chunks.join("");
    return text.length > this.cap ? text.slice(-this.cap) : text;
  }
}

/**
 * Splits decoded text into lines (without "\n" or a trailing "\r"). A line
 * longer than LINE_CAP characters is cut there: what follows, up to the next
 * newline, is only in the log files.
 */
class LineSplitter {
  private partial = "";
  private cut = false;
  private readonly emit: (line: string) => void;
  constructor(emit: (line: string) => void) {
    this.emit = emit;
  }
  push(chunk: string): void {
    let start = 0;
    let nl = chunk.indexOf("\n");
    if (nl === -1) {
      this.keep(chunk);
      return;
    }
    if (this.partial !== "" || this.cut) {
      this.keep(chunk.slice(0, nl));
      this.line(this.partial);
      this.partial = "";
      this.cut = false;
      start = nl + 1;
      nl = chunk.indexOf("\n", start);
    }
    while (nl !== -1) {
      this.line(nl - start > LINE_CAP ? chunk.slice(start, start + LINE_CAP) : chunk.slice(start, nl));
      start = nl + 1;
      nl = chunk.indexOf("\n", start);
    }
    this.keep(chunk.slice(start));
  }
  flush(): void {
    if (this.partial !== "" || this.cut) this.emit(this.partial);
    this.partial = "";
    this.cut = false;
  }
  private keep(text: string): void {
    if (this.cut || text === "") return;
    this.partial += text;
    if (this.partial.length > LINE_CAP) {
      this.partial = this.partial.slice(0, LINE_CAP);
      this.cut = true;
    }
  }
  private line(l: string): void {
    this.emit(l.charCodeAt(l.length - 1) === 13 ? l.slice(0, -1) : l);
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
type Env = Record<string, string | undefined>;

/**
 * The inherited environments (the prototype a phase's variables sit on) found
 * free of NUL bytes: each is read once, not on every phase. A phase's own
 * variables are read every time.
 */
const cleanPrototypes = new WeakSet<object>();

/** Which argument or variable holds a NUL byte, if any: spawning with one throws. */
function nulCarrier(argv: string[], env: Env | undefined): string | undefined {
  const i = argv.findIndex((a) => a.includes("\0"));
  if (i >= 0) return i === 0 ? "the program name" : `argument ${i}`;
  if (!env) return undefined;
  const carrier = (k: string) => `environment variable ${k.replace(/\0/g, "\\0")}`;
  for (const k of Object.keys(env)) if (k.includes("\0") || env[k]?.includes("\0")) return carrier(k);
  // inherited variables too: phases inherit the environment through a prototype
  const proto = Object.getPrototypeOf(env) as Env | null;
  if (!proto || proto === Object.prototype || cleanPrototypes.has(proto)) return undefined;
  let clean = true;
  for (const k in proto) {
    if (!k.includes("\0") && !proto[k]?.includes("\0")) continue;
    clean = false;
    // a variable the phase sets itself hides the inherited one
    if (!Object.hasOwn(env, k)) return carrier(k);
  }
  if (clean) cleanPrototypes.add(proto);
  return undefined;
}

/**
 * The shell words that set the mark: the hard limit on file locks is `ulimit -w` in dash and
 * busybox, `-x` in bash. Its status is not the script's: `$?` is 0 where the script begins.
 */
const MARK = `ulimit -w ${LEFTOVER_MARK} 2>/dev/null || ulimit -x ${LEFTOVER_MARK} 2>/dev/null || :`;

/** The system's shells, whose `-c` script can begin with MARK (a program elsewhere named `sh` is not known to be one). */
const MARKING_SHELLS = /^\/(?:usr\/)?bin\/(?:sh|dash|bash)$/;

/** Whether a spawn would find `program` (a path from `cwd`, or a name on `path`): one it would not fails as the spawn error it is, not through the wrapper. */
function findable(program: string, cwd: string | undefined, path: string | undefined): boolean {
  const candidates = program.includes("/") ? [isAbsolute(program) ? program : join(cwd ?? ".", program)] : (path ?? "").split(delimiter).filter((d) => isAbsolute(d)).map((d) => join(d, program));
  return candidates.some((c) => {
    try {
      accessSync(c, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export function runProcess(spec: ProcessSpec): Promise<ProcessResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const argv = typeof spec.command === "string" ? ["sh", "-c", spec.command] : spec.command;
    // phaseloop's own programs (the shell of a `run:` string, bwrap) by their absolute path, never a PATH lookup an agent could steer
    let program = OWN_PROGRAMS.has(argv[0]!) ? ownProgram(argv[0]!) : argv[0]!;
    let args = argv.slice(1);
    // a program to start with a file on fd 3 (the fence's filter for bwrap): opened here and
    // handed over as fd 3, without the shell that would open it (fd-launch.ts)
    let fd3: number | undefined;
    const launch = fd3Launch(program, args);
    if (launch !== undefined) {
      try {
        fd3 = openSync(launch.file, "r");
        program = launch.program;
        args = launch.args;
      } catch {
        // left to the shell, which says why
      }
    }
    if (spec.phase && !spec.phase.contained && !program.endsWith("/bwrap") && process.platform === "linux") {
      // outside a sandbox's pid namespace: a mark every process of the phase inherits and none can take off (orphans.ts).
      // A shell the phase starts anyway (a `run:` string, `sh -c …`) sets it before its script; any other program is
      // started through one that sets it, which costs a program more
      if (args[0] === "-c" && args.length >= 2 && (MARKING_SHELLS.test(program) || program === ownProgram("sh"))) args = ["-c", `${MARK}; ${args[1]}`, ...args.slice(2)];
      else if (findable(program, spec.cwd, spec.env.PATH)) {
        args = ["-c", `${MARK}; exec "$@"`, "sh", program, ...args];
        program = ownProgram("sh");
      }
    }
    const carried = nulCarrier(argv, spec.env);
    if (carried) {
      if (fd3 !== undefined) closeSync(fd3);
      const message = `cannot start the process: ${carried} holds a NUL byte, which a process cannot be given`;
      return resolve({ exitCode: null, signal: null, timedOut: false, idleTimedOut: false, aborted: false, durationMs: 0, stdout: "", stdoutTail: "", stderrTail: message, wroteLogs: false, spawnError: message });
    }
    const stdoutTail = new Tail(TAIL_CAP);
    const stderrTail = new Tail(TAIL_CAP);
    let stdout = "";
    let stdoutTruncated = false;
    let timedOut = false;
    let idleTimedOut = false;
    let aborted = false;
    let endedAfterResult = false;
    let resultTimer: ReturnType<typeof setTimeout> | undefined;
    let exitTimer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    let wallTimer: ReturnType<typeof setTimeout> | undefined;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const files: WriteStream[] = [];
    // log files are opened on the first output: a silent phase costs no file.
    // Reading waits while a log file is behind: output goes at disk speed, never piles up in memory.
    let behind = 0;
    const lazyFile = (path: string | undefined) => {
      let stream: WriteStream | undefined;
      return (chunk: Buffer) => {
        if (!path) return;
        if (!stream) {
          mkdirSync(dirname(path), { recursive: true });
          // a buffer of LOG_BUFFER lets reading and writing overlap; past it, reading waits
          stream = createWriteStream(path, { flags: "a", highWaterMark: LOG_BUFFER });
          files.push(stream);
        }
        if (stream.write(chunk)) return;
        if (behind++ === 0) {
          child.stdout!.pause();
          child.stderr!.pause();
        }
        stream.once("drain", () => {
          if (--behind === 0) {
            child.stdout!.resume();
            child.stderr!.resume();
          }
        });
      };
    };
    const outFile = lazyFile(spec.stdoutFile);
    const errFile = lazyFile(spec.stderrFile);
    const outText = new StringDecoder("utf8");
    const errText = new StringDecoder("utf8");

    const finish = (partial: Partial<ProcessResult>) => {
      if (settled) return;
      settled = true;
      clearTimeout(wallTimer);
      clearTimeout(idleTimer);
      clearTimeout(killTimer);
      clearTimeout(resultTimer);
      clearTimeout(exitTimer);
      spec.signal?.removeEventListener("abort", onAbort);
      sweep();
      outLines.push(outText.end());
      errLines.push(errText.end());
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
          endedAfterResult,
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

    const onResult = () => {
      if (resultTimer !== undefined || settled) return;
      resultTimer = setTimeout(() => {
        endedAfterResult = true;
        stop();
      }, spec.resultGraceMs ?? 2000);
    };
    const outLines = new LineSplitter((l) => spec.onLine?.("stdout", l) === "result" && onResult());
    const errLines = new LineSplitter((l) => spec.onLine?.("stderr", l) === "result" && onResult());

    const child = spawn(program, args, {
      cwd: spec.cwd,
      env: spec.env as NodeJS.ProcessEnv,
      stdio: fd3 === undefined ? [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] : [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe", fd3],
      detached: true,
    });
    // the child has its own copy
    if (fd3 !== undefined) closeSync(fd3);

    // ended: the program has exited and been reaped, whoever called
    if (spec.phase && !spec.phase.contained && child.pid !== undefined) liveRoots.add(child.pid);
    const sweep = (stopping = false) => {
      if (child.pid !== undefined) liveRoots.delete(child.pid);
      try {
        // every process of the phase came after its first one: only those are read (the first, once reaped, is not)
        const ended = child.exitCode !== null || child.signalCode !== null;
        if (spec.phase && (stopping || !spec.phase.contained)) killPhaseProcesses(spec.phase.runId, spec.phase.phaseDir, child.pid === undefined ? undefined : { lastPid: ended ? child.pid : child.pid - 1, at: started });
      } catch {
        // nothing to end
      }
    };
    const stop = () => {
      killGroup(child.pid, "SIGTERM");
      sweep(true);
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

    // the log files get the bytes as they come; the tails, the captured stdout and the lines get decoded text
    child.stdout!.on("data", (bytes: Buffer) => {
      armIdle();
      outFile(bytes);
      const chunk = outText.write(bytes);
      stdoutTail.push(chunk);
      if (stdout.length < STDOUT_CAP) stdout += chunk;
      else stdoutTruncated = true;
      outLines.push(chunk);
    });
    child.stderr!.on("data", (bytes: Buffer) => {
      armIdle();
      errFile(bytes);
      const chunk = errText.write(bytes);
      stderrTail.push(chunk);
      errLines.push(chunk);
    });
    if (spec.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {
        // the program may exit without reading its stdin
      });
      child.stdin.end(spec.stdin);
    }
    // a process that left the group may hold stdout open after the program exited: it is ended, and the output closed
    child.on("exit", (code, signal) => {
      exitTimer = setTimeout(() => {
        killGroup(child.pid, "SIGKILL");
        sweep(true);
        exitTimer = setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
          finish({ exitCode: code, signal: signal ?? null });
        }, 500);
      }, spec.killGraceMs ?? 2000);
    });
    child.on("close", (code, signal) => {
      // make sure nothing of the group outlives a killed phase
      if (timedOut || idleTimedOut || aborted || endedAfterResult) killGroup(child.pid, "SIGKILL");
      finish({ exitCode: code, signal: signal ?? null });
    });
  });
}
