/**
 * The OS sandbox before a run starts: whether the machine offers one, which phases get it,
 * and, when a phase requires one that cannot run here, the located error that stops the run
 * before anything is written. What was decided goes into run.json.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { CompiledPhase, Machine } from "../machine/types.ts";
import { parsePipelineText, spanOfPointer } from "../pipeline/parse-pipeline-text.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import type { RunSandbox } from "./run-info.ts";
import { probeSandbox } from "../host/probe-sandbox.ts";
import { phaseHosts } from "./phase-fence.ts";
import { fenceable, hookSandbox, phaseSandbox, sandboxPreflight, unsandboxedPhases, type SandboxOffer } from "../machine/sandbox-plan.ts";
import type { CompiledHook } from "../machine/types.ts";

export interface SandboxCheck {
  diagnostics: Diagnostic[];
  record: RunSandbox;
  /** Said at the start of the run when auto phases run without a sandbox. */
  warning?: string;
  /** Said at the start of the run when phases or hooks run unfenced because a setting says `sandbox: off`. */
  unfenced?: string;
}

/** The phases and hooks that run a process outside the OS sandbox because a setting (or the flag) turned it off. */
export function unfencedByChoice(machine: Machine, flag: SandboxMode | undefined): string[] {
  const out: string[] = [];
  const why = (pointer: string | undefined) => (pointer === undefined ? "--sandbox off" : `${pointer.slice(1).replaceAll("/", ".")}: off`);
  for (const p of machine.phases) {
    if (p.kind !== "agent" && p.kind !== "run") continue;
    const plan = phaseSandbox(machine, p, flag);
    if (plan.mode === "off") out.push(`${p.name} (${why(plan.pointer)})`);
  }
  for (const hook of Object.values(machine.hooks) as CompiledHook[]) {
    const plan = hookSandbox(machine, hook, flag);
    if (plan.mode === "off") out.push(`hook ${hook.name} (${why(plan.pointer)})`);
  }
  return out;
}

/** `env` and `workdir`: the run's, which say which hosts each phase may reach. */
export function checkSandbox(machine: Machine, text: string, flag: SandboxMode | undefined, env: Record<string, string | undefined>, workdir: string): SandboxCheck {
  const needed = machine.phases.some((p) => phaseSandbox(machine, p, flag).mode !== "off") || Object.values(machine.hooks).some((h) => hookSandbox(machine, h as CompiledHook, flag).mode !== "off");
  const offer: SandboxOffer = needed ? probeSandbox() : { available: false as const, reason: "no phase asks for one", fix: "" };
  let document: ReturnType<typeof parsePipelineText>["document"];
  const locate = (pointer: string) => {
    document ??= parsePipelineText(text, machine.file).document;
    return spanOfPointer(document, text, pointer);
  };
  // only a machine without the proxy asks which phases may reach hosts, once each
  const hosted = new Set(offer.available && offer.noProxy ? machine.phases.filter((p) => phaseHosts(machine, p, env, workdir).length > 0).map((p) => p.name) : []);
  const reaches = (p: CompiledPhase): boolean => hosted.has(p.name);
  const diagnostics = needed ? sandboxPreflight(machine, flag, offer, locate, reaches) : [];
  const phases: RunSandbox["phases"] = {};
  for (const p of machine.phases) {
    const mode = phaseSandbox(machine, p, flag).mode;
    phases[p.name] = mode === "off" ? "off" : fenceable(offer, reaches(p)) ? "on" : "unavailable";
  }
  const record: RunSandbox = offer.available
    ? { flag: flag ?? null, available: true, platform: offer.platform, ...(offer.noProxy ? { no_proxy: offer.noProxy } : {}), phases }
    : { flag: flag ?? null, available: false, reason: offer.reason, fix: offer.fix, phases };
  const bare = needed ? unsandboxedPhases(machine, flag, offer, reaches) : [];
  const runs = `run${bare.length === 1 ? "s" : ""} without one (sandbox: auto)`;
  const warning = bare.length === 0 ? undefined
    : !offer.available ? `no OS sandbox here (${offer.reason}): ${bare.join(", ")} ${runs}. ${offer.fix}`
    : `no proxy to allowed hosts here (${offer.noProxy!.reason}): ${bare.join(", ")}, which may reach hosts, ${runs}. ${offer.noProxy!.fix}`;
  const off = unfencedByChoice(machine, flag);
  const unfenced = off.length === 0 ? undefined : `outside the OS sandbox, with your rights: ${off.join(", ")}`;
  return { diagnostics, record, warning, ...(unfenced ? { unfenced } : {}) };
}
