import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";
import { fd3Launch, withFd3 } from "../../src/host/fd-launch.ts";
import { ownProgram } from "../../src/host/own-programs.ts";
import { runProcess } from "../../src/host/run-process.ts";

const dir = mkdtempSync(join(tmpdir(), "phaseloop-fd3-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { PATH: process.env.PATH };
const sh = ownProgram("sh");

describe("a program started with a file on fd 3", () => {
  it("is read back from the shell form only when the file and the program are absolute paths", () => {
    expect(fd3Launch(sh, withFd3(sh, "/f", ["/usr/bin/bwrap", "--seccomp", "3"]).slice(1))).toEqual({ program: "/usr/bin/bwrap", args: ["--seccomp", "3"], file: "/f" });
    expect(fd3Launch(sh, withFd3(sh, "f", ["/usr/bin/bwrap"]).slice(1))).toBeUndefined();
    expect(fd3Launch(sh, withFd3(sh, "/f", ["bwrap"]).slice(1))).toBeUndefined();
    expect(fd3Launch(sh, ["-c", 'exec "$@" 4<"$0"', "/f", "/usr/bin/bwrap"])).toBeUndefined();
    expect(fd3Launch("/usr/bin/bash", withFd3(sh, "/f", ["/usr/bin/bwrap"]).slice(1))).toBeUndefined();
  });

  it("gets the file's bytes on fd 3, started by runProcess without the shell, as the shell form means", async () => {
    const file = join(dir, "bytes");
    writeFileSync(file, "filter\n");
    // the program's parent is runProcess's own process: no shell in between
    const argv = withFd3(sh, file, [sh, "-c", 'cat <&3; [ "$PPID" = "$1" ] && echo direct', "x", String(process.pid)]);
    const r = await runProcess({ command: argv, cwd: dir, env });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe("filter\ndirect\n");
  });

  it("fails as the shell says when the file cannot be opened", async () => {
    const r = await runProcess({ command: withFd3(sh, join(dir, "absent"), [sh, "-c", "echo ran"]), cwd: dir, env });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderrTail).toMatch(/absent/);
  });
});
