import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Host } from "../../src/host/host.ts";
import { HostCrash, MemoryHost } from "../../src/host/memory-host.ts";
import { nodeHost } from "../../src/host/node-host.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The same calls give the same answers on the real host and in memory. */
function exercise(host: Host, root: string): unknown[] {
  const f = host.files;
  const out: unknown[] = [];
  f.mkdir(join(root, "a/b"));
  f.writeText(join(root, "a/b/x.txt"), "one\n");
  f.appendText(join(root, "a/b/x.txt"), "two\n");
  out.push(f.readText(join(root, "a/b/x.txt")));
  try {
    f.writeText(join(root, "a/b/x.txt"), "no", { exclusive: true });
  } catch (error) {
    out.push((error as NodeJS.ErrnoException).code);
  }
  const h = f.openAppend(join(root, "log"));
  h.write("l1\n");
  h.write("l2\n");
  h.truncate(3);
  h.write("l3\n");
  h.close();
  out.push(f.readText(join(root, "log")));
  f.writeAtomic(join(root, "state.json"), "{}");
  f.rename(join(root, "state.json"), join(root, "a/state.json"));
  out.push(f.readdir(join(root, "a")).sort(), f.exists(join(root, "state.json")));
  out.push(f.stat(join(root, "a"))?.isDirectory(), f.lstat(join(root, "a/state.json"))?.isFile(), f.lstat(join(root, "nope")));
  try {
    f.readText(join(root, "nope"));
  } catch (error) {
    out.push((error as NodeJS.ErrnoException).code);
  }
  try {
    f.remove(join(root, "a"));
  } catch (error) {
    out.push("refused");
  }
  f.remove(join(root, "a"), { recursive: true });
  f.remove(join(root, "a"), { force: true });
  out.push(f.readdir(root).sort(), f.readSource(join(root, "log")), f.readSource(join(root, "gone")));
  return out;
}

describe("the memory host", () => {
  it("answers file calls as the real host does", () => {
    const dir = mkdtempSync(join(tmpdir(), "host-"));
    dirs.push(dir);
    const real = exercise(nodeHost, dir);
    const memory = exercise(new MemoryHost(), "/tmp/run");
    expect(memory).toEqual(real);
    expect(readFileSync(join(dir, "log"), "utf8")).toBe("l1\nl3\n");
  });

  it("freezes the files at the injected crash; a torn append lands half", () => {
    const host = new MemoryHost({ crashAt: 3, tear: true });
    host.files.mkdir("/w"); // 1
    host.files.writeText("/w/a", "a"); // 2
    expect(() => host.files.appendText("/w/a", "bcde")).toThrow(HostCrash); // 3: torn
    expect(() => host.files.writeText("/w/b", "b")).toThrow(HostCrash);
    expect(host.restart().snapshot()).toEqual({ "/w/a": "abc" });
    expect(host.writes).toBe(3);
  });

  it("has a clock that moves only when told, firing timers it passes", async () => {
    const host = new MemoryHost({ now: 1000 });
    const fired: number[] = [];
    host.clock.setTimer(() => fired.push(host.clock.now()), 50);
    const t = host.clock.setTimer(() => fired.push(-1), 70);
    host.clock.clearTimer(t);
    expect(host.clock.now()).toBe(1000);
    host.clock.advance(40);
    expect(fired).toEqual([]);
    await host.clock.sleep(20);
    expect(fired).toEqual([1050]);
    expect(host.clock.now()).toBe(1060);
    expect(host.clock.monotonic()).toBe(60);
  });

  it("runs scripted programs, feeding their lines and writing their logs", async () => {
    const host = new MemoryHost({ processes: (spec) => (Array.isArray(spec.command) && spec.command[0] === "echo" ? { stdout: "hi\nthere\n" } : { exitCode: 1, stderr: "no\n" }) });
    const lines: string[] = [];
    host.files.mkdir("/logs");
    const r = await host.processes.run({ command: ["echo"], cwd: "/work", env: {}, stdoutFile: "/logs/out", onLine: (_s, l) => void lines.push(l) });
    expect(lines).toEqual(["hi", "there"]);
    expect(r.exitCode).toBe(0);
    expect(host.files.readText("/logs/out")).toBe("hi\nthere\n");
    expect((await host.processes.run({ command: "false", cwd: "/work", env: {} })).exitCode).toBe(1);
  });

  it("finds programs on a search path by their execute bit", async () => {
    const host = new MemoryHost();
    host.program("/usr/bin/claude");
    host.files.writeText("/usr/bin/plain", "");
    expect(await host.programs.find("claude", "/", "/nope:/usr/bin")).toBe("/usr/bin/claude");
    expect(await host.programs.find("plain", "/", "/usr/bin")).toBeNull();
  });
});
