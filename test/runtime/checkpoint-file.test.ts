import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CheckpointFile, readCheckpointFile } from "../../src/runtime/checkpoint-file.ts";
import { RunStore } from "../../src/runtime/run-store.ts";

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

describe("the checkpoint's journal", () => {
  const journaled = (dir: string) => new CheckpointFile(join(dir, "state.json"), { journal: true });
  const journal = (dir: string) => readFileSync(join(dir, "state.journal"), "utf8");

  it("takes a checkpoint as one appended line, newest for every reader at once; settling replaces state.json with it and empties the journal", () => {
    const dir = fresh();
    const file = journaled(dir);
    file.write('{"seq":1}');
    file.record('{"seq":2}');
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":1}');
    expect(journal(dir)).toBe('{"seq":2}\n');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":2}');
    file.record('{"seq":3}');
    expect(journal(dir)).toBe('{"seq":2}\n{"seq":3}\n');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":3}');
    file.prepare();
    file.settle();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":3}');
    expect(journal(dir)).toBe("");
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":3}');
    // settling again writes nothing: no next file is made
    file.settle();
    expect(existsSync(join(dir, "state.json.next"))).toBe(false);
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":3}');
    file.record('{"seq":4}');
    file.close();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":4}');
    expect(journal(dir)).toBe("");
    expect(existsSync(join(dir, "state.json.next"))).toBe(false);
  });

  it("passes over a line torn by a crash, to the whole line before it or to state.json", () => {
    const dir = fresh();
    writeFileSync(join(dir, "state.json"), '{"seq":1}');
    writeFileSync(join(dir, "state.journal"), '{"seq":2}\n{"seq":3,"snap');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":2}');
    writeFileSync(join(dir, "state.journal"), '{"seq":2,"sn');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":1}');
    // a whole line is one that ends with its newline, even if what precedes it parses
    writeFileSync(join(dir, "state.journal"), "{}");
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":1}');
    // recovering leaves state.json as it is and empties a journal of torn bytes, so that the next line is not glued to them
    writeFileSync(join(dir, "state.journal"), '{"seq":2,"sn');
    const file = journaled(dir);
    file.recover();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":1}');
    expect(journal(dir)).toBe("");
    file.record('{"seq":3}');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":3}');
    file.close();
  });

  it("is put in place by recover when a crash left the newest checkpoint only there, before state.json or .next is written again", () => {
    const dir = fresh();
    writeFileSync(join(dir, "state.json"), '{"seq":1}');
    writeFileSync(join(dir, "state.json.next"), '{"seq":1}');
    writeFileSync(join(dir, "state.journal"), '{"seq":2}\n');
    const file = journaled(dir);
    file.recover();
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":2}');
    expect(journal(dir)).toBe("");
    // killed between removing state.json and the rename: the journal still wins over .next
    const gone = fresh();
    writeFileSync(join(gone, "state.json.next"), '{"seq":5}');
    writeFileSync(join(gone, "state.journal"), '{"seq":6}\n');
    journaled(gone).recover();
    expect(readFileSync(join(gone, "state.json"), "utf8")).toBe('{"seq":6}');
  });

  it("is emptied when state.json is written over (a rebuilt checkpoint is not hidden by an older line)", () => {
    const dir = fresh();
    const file = journaled(dir);
    file.record('{"seq":9}');
    file.write('{"seq":1,"rebuilt":true}');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":1,"rebuilt":true}');
    expect(journal(dir)).toBe("");
    // a journal left by an earlier life of the run is emptied as well
    appendFileSync(join(dir, "state.journal"), '{"seq":10}\n');
    const again = journaled(dir);
    again.write('{"seq":2}');
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":2}');
    again.close();
  });

  it("is made a plain file again, whatever was in its place, when state.json is written outright", () => {
    const dir = fresh();
    mkdirSync(join(dir, "state.journal"));
    writeFileSync(join(dir, "state.journal", "inside"), "x");
    const file = journaled(dir);
    file.recover();
    file.write('{"seq":1}');
    expect(journal(dir)).toBe("");
    expect(readCheckpointFile(join(dir, "state.json"))).toBe('{"seq":1}');
    file.close();
  });

  it("is never written through a link", () => {
    const dir = fresh();
    writeFileSync(join(dir, "elsewhere"), "keep\n");
    symlinkSync(join(dir, "elsewhere"), join(dir, "state.journal"));
    expect(readCheckpointFile(join(dir, "state.json"))).toBeUndefined();
    const file = journaled(dir);
    file.record('{"seq":1}');
    file.close();
    expect(readFileSync(join(dir, "elsewhere"), "utf8")).toBe("keep\n");
    expect(readFileSync(join(dir, "state.json"), "utf8")).toBe('{"seq":1}');
  });

  it("belongs to a run's store: what a run records is read back as its state", () => {
    const workdir = fresh();
    const store = RunStore.create(workdir, "20260101-000000-abce", { "state.json": '{"seq":0}' });
    try {
      store.recordStateText('{"seq":1}');
      expect(store.readState()).toEqual({ seq: 1 });
      expect(readFileSync(join(store.dir, "state.json"), "utf8")).toBe('{"seq":0}');
    } finally {
      store.close();
    }
    expect(readFileSync(join(store.dir, "state.json"), "utf8")).toBe('{"seq":1}');
  });
});
