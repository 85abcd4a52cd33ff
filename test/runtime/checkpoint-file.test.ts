import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CheckpointFile, readCheckpointFile, RunStore } from "../../src/runtime/run-store.ts";

const root = mkdtempSync(join(tmpdir(), "phaseloop-checkpoint-file-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => {
  const dir = join(root, String(++n));
  mkdirSync(dir);
  return dir;
};

describe("the checkpoint file", () => {
  it("is replaced whole, and the prepared next file is not left behind", () => {
    const dir = fresh();
    const file = new CheckpointFile(join(dir, "state.json"));
    file.write('{"seq":1}');
    file.prepare();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":1}');
    file.write('{"seq":2}');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":2}');
    file.prepare();
    file.close();
    expect(existsSync(join(dir, "state.json.next"))).toBe(false);
  });

  it("puts a complete .next in place when a crash left it the only copy, before anything writes .next again", () => {
    const dir = fresh();
    // killed between removing state.json and renaming state.json.next over it
    writeFileSync(join(dir, "state.json.next"), '{"seq":7}');
    const file = new CheckpointFile(join(dir, "state.json"));
    file.recover();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":7}');
    expect(existsSync(join(dir, "state.json.next"))).toBe(false);
    // the next write truncates a .next of its own, never the only copy
    file.prepare();
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":7}');
    file.write('{"seq":8}');
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":8}');
  });

  it("leaves a .next that is not whole JSON, or not a file, and a .next beside a checkpoint, where they are", () => {
    const torn = fresh();
    writeFileSync(join(torn, "state.json.next"), '{"seq":7,"snap');
    new CheckpointFile(join(torn, "state.json")).recover();
    expect(existsSync(join(torn, "state.json"))).toBe(false);
    expect(readFileSync(join(torn, "state.json.next"), "utf8")).toBe('{"seq":7,"snap');

    const empty = fresh();
    writeFileSync(join(empty, "state.json.next"), "");
    new CheckpointFile(join(empty, "state.json")).recover();
    expect(existsSync(join(empty, "state.json"))).toBe(false);

    const link = fresh();
    writeFileSync(join(link, "elsewhere.json"), '{"seq":1}');
    symlinkSync(join(link, "elsewhere.json"), join(link, "state.json.next"));
    new CheckpointFile(join(link, "state.json")).recover();
    expect(existsSync(join(link, "state.json"))).toBe(false);

    const both = fresh();
    writeFileSync(join(both, "state.json"), '{"seq":2}');
    writeFileSync(join(both, "state.json.next"), '{"seq":3}');
    new CheckpointFile(join(both, "state.json")).recover();
    expect(readFileSync(join(both, "state.json"), "utf8")).toBe('{"seq":2}');
  });

  it("is recovered when a run's store is opened, for the checkpoint and the baseline", () => {
    const workdir = fresh();
    const runDir = join(workdir, ".phaseloop", "runs", "20260101-000000-abcd");
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, "state.json.next"), '{"seq":4}');
    writeFileSync(join(runDir, "baseline.json.next"), '{"iteration":2}');
    const store = new RunStore(workdir, "20260101-000000-abcd");
    try {
      expect(store.readState()).toEqual({ seq: 4 });
      expect(readFileSync(join(runDir, "baseline.json"), "utf8")).toBe('{"iteration":2}');
      expect(existsSync(join(runDir, "state.json.next"))).toBe(false);
    } finally {
      store.close();
    }
  });
});
