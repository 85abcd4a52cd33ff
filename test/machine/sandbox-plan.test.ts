import { describe, expect, it } from "vitest";
import { fenceable, sandboxPreflight, unsandboxedPhases, type SandboxOffer } from "../../src/machine/sandbox-plan.ts";
import { compile } from "./helpers.ts";

const full: SandboxOffer = { available: true, platform: "linux" };
const noProxy: SandboxOffer = { available: true, platform: "linux", noProxy: { reason: "socat is not found on PATH", fix: "install it" } };
const none: SandboxOffer = { available: false, reason: "bwrap not found on PATH", fix: "install them" };
const locate = () => ({ start: 1, end: 2 });

const machine = (mode: "auto" | "required") =>
  compile({
    sandbox: mode,
    agents: { scripted: { command: ["sh", "-c", "true"] } },
    phases: {
      local: { agent: "scripted", prompt: "x", next: "online" },
      online: { agent: "scripted", prompt: "x", next: [{ stop: "complete" }] },
    },
    stop: { max_iterations: 1 },
  });
const online = (p: { name: string }) => p.name === "online";

describe("which phases the machine can fence", () => {
  it("a machine without the proxy fences only phases that may reach no host", () => {
    expect(fenceable(full, true)).toBe(true);
    expect(fenceable(noProxy, false)).toBe(true);
    expect(fenceable(noProxy, true)).toBe(false);
    expect(fenceable(none, false)).toBe(false);
  });

  it("required: an error for a phase that may reach hosts without the proxy, at the setting, naming the phase and the fix", () => {
    const d = sandboxPreflight(machine("required"), undefined, noProxy, locate, online);
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ code: "SANDBOX_UNAVAILABLE", severity: "error", pointer: "/sandbox", start: 1, end: 2, message: 'sandbox: required, but phase "online" may reach hosts, and the proxy to them cannot run here: socat is not found on PATH', hint: "install it; or set sandbox: auto to run unsandboxed where none is available" });
    expect(sandboxPreflight(machine("required"), undefined, noProxy, locate, () => false)).toEqual([]);
    expect(sandboxPreflight(machine("required"), undefined, full, locate, online)).toEqual([]);
    expect(sandboxPreflight(machine("required"), "required", noProxy, locate, online)[0]).toMatchObject({ message: expect.stringMatching(/^--sandbox required, but phase "online"/) });
    expect(sandboxPreflight(machine("required"), undefined, none, locate, online)[0]).toMatchObject({ message: "sandbox: required, but no OS sandbox can run here: bwrap not found on PATH" });
  });

  it("auto: the phases that run unsandboxed are those the machine cannot fence", () => {
    expect(unsandboxedPhases(machine("auto"), undefined, noProxy, online)).toEqual(["online"]);
    expect(unsandboxedPhases(machine("auto"), undefined, none, online)).toEqual(["local", "online"]);
    expect(unsandboxedPhases(machine("auto"), undefined, full, online)).toEqual([]);
    expect(unsandboxedPhases(machine("auto"), "off", noProxy, online)).toEqual([]);
  });
});
