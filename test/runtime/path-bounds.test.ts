import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { NAME_MAX_BYTES, PATH_MAX_BYTES, PATH_MAX_DEPTH, pathBoundReason, placeInside, writeInside } from "../../src/host/open-inside.ts";
import { readInside } from "../../src/host/read-inside.ts";
import { ChatStream } from "../../src/agents/openai/chat-stream.ts";

const base = mkdtempSync(join(tmpdir(), "phaseloop-bounds-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const work = () => mkdtempSync(join(base, "w-"));

describe("paths are bounded before the disc is touched", () => {
  it("refuses a path longer than PATH_MAX, a name longer than NAME_MAX and one deeper than the depth bound", () => {
    const dir = work();
    expect(placeInside(dir, "d/".repeat(2100) + "x")).toMatchObject({ ok: false, reason: expect.stringContaining(`at most ${PATH_MAX_BYTES}`) });
    expect(placeInside(dir, "n".repeat(NAME_MAX_BYTES + 1))).toMatchObject({ ok: false, reason: expect.stringContaining(`longer than ${NAME_MAX_BYTES}`) });
    expect(placeInside(dir, "d/".repeat(PATH_MAX_DEPTH) + "x")).toMatchObject({ ok: false, reason: expect.stringContaining(`more than ${PATH_MAX_DEPTH}`) });
    expect(placeInside(dir, "d/".repeat(PATH_MAX_DEPTH - 1) + "x")).toMatchObject({ ok: true });
    // ".." climbs back: depth is where the path ends up, not how many names it spells
    expect(placeInside(dir, "d/../".repeat(200) + "x")).toMatchObject({ ok: true, rel: "x" });
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a write past a bound makes no folder, nor does one refused on the way", () => {
    const dir = work();
    expect(writeInside(dir, "d/".repeat(PATH_MAX_DEPTH + 5) + "x", "x")).toMatchObject({ ok: false });
    expect(readdirSync(dir)).toEqual([]);
    mkdirSync(join(dir, "a/b/c.txt"), { recursive: true }); // a folder where the file should go
    expect(writeInside(dir, "a/new/deeper/../../b/c.txt", "x")).toMatchObject({ ok: false });
    expect(writeInside(dir, "n1/n2/n3/../../../a/b/c.txt", "x")).toMatchObject({ ok: false });
    expect(existsSync(join(dir, "n1"))).toBe(false);
  });

  it("a write through a link to a folder inside lands in the real folder, its missing folders made once", () => {
    const dir = work();
    mkdirSync(join(dir, "real"));
    symlinkSync(join(dir, "real"), join(dir, "ln"));
    expect(writeInside(dir, "ln/x/y.txt", "y")).toMatchObject({ ok: true, rel: "real/x/y.txt" });
  });

  it("file() in a prompt is bounded the same way", () => {
    expect(() => readInside(work(), "d/".repeat(2100) + "x", 100)).toThrow(/outside the workdir|bytes long/);
  });

  it("property: the bound check agrees with the bounds and never throws", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("a", "..", ".", "", "n".repeat(300), "é"), { maxLength: 120 }), (parts) => {
        const path = parts.join("/");
        const reason = pathBoundReason(path);
        const tooLong = Buffer.byteLength(path) > PATH_MAX_BYTES;
        const longName = parts.some((p) => p.length >= 300);
        if (tooLong || longName) expect(reason).toBeDefined();
      }),
    );
  });
});

describe("a streamed answer", () => {
  it("is read in time linear in its size, however many events one network chunk holds", () => {
    const one = (n: number) => {
      const events = Array.from({ length: n }, (_, i) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ index: i % 50, function: { name: "write_file", arguments: "aaaaaaaaa" } }] } }] })}\n\n`).join("");
      const s = new ChatStream();
      const t = performance.now();
      s.push(events);
      s.end();
      return { ms: performance.now() - t, calls: s.message().tool_calls?.length };
    };
    one(2000);
    const small = one(20_000);
    const large = one(200_000);
    expect(large.calls).toBe(50);
    // ten times the events cost about ten times as much (a quadratic reader: about a hundred)
    expect(large.ms / small.ms).toBeLessThan(30);
  });
});
