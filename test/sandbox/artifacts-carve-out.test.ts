/** The run's artifacts folder is writable inside the read-only `.phaseloop`: bound after it, and nothing else of it. */
import { describe, expect, it } from "vitest";
import { bwrapArgs, type PathKind } from "../../src/sandbox/bwrap-args.ts";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";

const ART = "/w/.phaseloop/runs/r1/artifacts";

describe("the artifacts carve-out", () => {
  it("keeps .phaseloop denied and names the artifacts folder as its one carve-out", () => {
    const p = compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", write: ["**"], agent: "command", artifacts: ART });
    expect(p.denyWrite).toEqual(["/w/.git", "/w/.phaseloop"]);
    expect(p.carveOut).toEqual([ART]);
    // outside .phaseloop it is an ordinary write directory
    const lane = compileSandbox({ workdir: "/lane", home: "/h", tempDir: "/t/p", write: ["src/**"], agent: "command", artifacts: ART });
    expect(lane.carveOut).toBeUndefined();
    expect(lane.allowWrite).toContain(ART);
  });

  it("binds the folder writable after .phaseloop is bound read-only (bubblewrap applies mounts in order)", () => {
    for (const write of [["**"], ["src/**"]]) {
      const profile = compileSandbox({ workdir: "/w", home: "/h", tempDir: "/t/p", write, agent: "command", artifacts: ART });
      const disk: Record<string, PathKind> = { "/w": "dir", "/w/src": "dir", "/t/p": "dir", "/w/.phaseloop": "dir", [ART]: "dir" };
      const { args } = bwrapArgs({ profile, cwd: "/w", command: ["true"], exports: {}, proxy: { socket: "/s", username: "u", token: "t" }, seccomp: { hex: "00", fd: 3, perl: { path: "/usr/bin/perl", prctl: 157 } }, socat: "socat", nestedProtected: [], kindOf: (p) => disk[p] });
      const binds = args.flatMap((a, i) => (a === "--bind" || a === "--ro-bind" ? [`${a} ${args[i + 1]}`] : []));
      const last = binds.lastIndexOf(`--bind ${ART}`);
      expect(last).toBeGreaterThan(-1);
      if (write[0] === "**") expect(last).toBeGreaterThan(binds.indexOf("--ro-bind /w/.phaseloop"));
    }
  });
});
