/**
 * Which phases run in the OS sandbox, and what a run needs before it starts. Pure: the
 * machine, the `--sandbox` flag and what the machine offers in, decisions out.
 *
 * A phase that runs a process (an agent, or a `run` command: both run the agent's work, a
 * verify step runs the code the agent just wrote) follows the command line, then its own
 * `sandbox`, then the pipeline's (default auto). A hook follows the same order.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { CompiledPhase, Machine } from "./types.ts";
import type { PipelineDoc, SandboxMode } from "../pipeline/spec.ts";

export interface PhaseSandbox {
  mode: SandboxMode;
  /** JSON pointer of the setting that decided the mode; none for the default or the command line. */
  pointer?: string;
}

/**
 * What the machine offers: a sandbox, or why not and how to get one. `noProxy`: the fence
 * runs, but not the proxy through which a phase reaches its allowed hosts, so only phases
 * that may reach no host can be fenced.
 */
export type SandboxOffer = { available: true; platform: string; noProxy?: { reason: string; fix: string } } | { available: false; reason: string; fix: string };

/** Whether a phase can be fenced on what the machine offers; `reachesHosts`: it may reach some host. */
export function fenceable(offer: SandboxOffer, reachesHosts: boolean): boolean {
  return offer.available && !(reachesHosts && offer.noProxy !== undefined);
}

export function phaseSandbox(machine: Pick<Machine, "sandbox">, phase: Pick<CompiledPhase, "name" | "kind" | "sandbox">, flag?: SandboxMode): PhaseSandbox {
  const own = phase.sandbox === undefined ? undefined : { mode: phase.sandbox, pointer: `/phases/${phase.name}/sandbox` };
  if (flag === "off") return { mode: "off" };
  // a question or a parallel group runs no process of its own (a group's members are phases)
  if (phase.kind !== "agent" && phase.kind !== "run") return { mode: "off" };
  if (flag !== undefined) return { mode: flag };
  if (own) return own;
  if (machine.sandbox !== undefined) return { mode: machine.sandbox, pointer: "/sandbox" };
  return { mode: "auto" };
}

/** A hook's mode: like a phase's, its own setting at `/hooks/NAME/sandbox`. */
export function hookSandbox(machine: Pick<Machine, "sandbox">, hook: { name: string; sandbox?: SandboxMode }, flag?: SandboxMode): PhaseSandbox {
  const plan = phaseSandbox(machine, { name: hook.name, kind: "run", sandbox: hook.sandbox }, flag);
  return plan.pointer?.startsWith("/phases/") ? { ...plan, pointer: `/hooks/${hook.name}/sandbox` } : plan;
}

/** Whether the phase runs sandboxed on a machine offering `offer` (required without one never runs). */
export function sandboxed(plan: PhaseSandbox, offer: SandboxOffer): boolean {
  return plan.mode !== "off" && offer.available;
}

/**
 * Preflight: every phase that requires a sandbox on a machine without one (or, for a phase
 * that may reach some host, without the proxy) is an error at the setting that asked for it
 * (or at the command line's flag), saying why and what to do. `locate` turns a pointer into
 * a span of the pipeline file; `reachesHosts` says whether a phase may reach some host.
 */
export function sandboxPreflight(
  machine: Pick<Machine, "sandbox" | "phases" | "file">,
  flag: SandboxMode | undefined,
  offer: SandboxOffer,
  locate: (pointer: string) => { start: number; end: number },
  reachesHosts: (phase: CompiledPhase) => boolean = () => false,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const phase of machine.phases) {
    const plan = phaseSandbox(machine, phase, flag);
    if (plan.mode !== "required" || fenceable(offer, reachesHosts(phase))) continue;
    const key = plan.pointer ?? "--sandbox";
    if (seen.has(key)) continue;
    seen.add(key);
    const asked = plan.pointer === undefined ? "--sandbox required" : plan.pointer === "/sandbox" ? "sandbox: required" : `phase "${phase.name}" has sandbox: required`;
    const [why, fix] = offer.available
      ? [`phase "${phase.name}" may reach hosts, and the proxy to them cannot run here: ${offer.noProxy!.reason}`, offer.noProxy!.fix]
      : [`no OS sandbox can run here: ${offer.reason}`, offer.fix];
    out.push({
      code: "SANDBOX_UNAVAILABLE",
      severity: "error",
      message: `${asked}, but ${why}`,
      file: machine.file,
      ...(plan.pointer === undefined ? { start: 0, end: 0 } : locate(plan.pointer)),
      pointer: plan.pointer,
      hint: `${fix}; or set sandbox: auto to run unsandboxed where none is available`,
    });
  }
  return out;
}

/** The phases that would run sandboxed but cannot, because the machine has no sandbox, or no proxy for their hosts (mode auto). */
export function unsandboxedPhases(machine: Pick<Machine, "sandbox" | "phases">, flag: SandboxMode | undefined, offer: SandboxOffer, reachesHosts: (phase: CompiledPhase) => boolean = () => false): string[] {
  return machine.phases.filter((p) => phaseSandbox(machine, p, flag).mode === "auto" && !fenceable(offer, reachesHosts(p))).map((p) => p.name);
}

/** Each phase's sandbox mode, read from the document (for `validate`). */
export function documentSandboxModes(doc: PipelineDoc): Record<string, SandboxMode> {
  const out: Record<string, SandboxMode> = {};
  for (const [name, spec] of Object.entries(doc.phases)) {
    // a phase that is neither runs no process of its own (a question, a parallel group)
    const kind: CompiledPhase["kind"] = spec.run !== undefined ? "run" : spec.agent !== undefined ? "agent" : "ask";
    out[name] = phaseSandbox(doc, { name, kind, sandbox: spec.sandbox }).mode;
  }
  for (const [name, spec] of Object.entries(doc.hooks ?? {})) {
    const own = typeof spec === "object" && !Array.isArray(spec) ? spec.sandbox : undefined;
    out[`hook ${name}`] = hookSandbox(doc, { name, sandbox: own }).mode;
  }
  return out;
}
