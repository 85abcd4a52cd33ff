/**
 * What an agent phase asks of its agent beyond a prompt: a model (a tier its
 * agent defines, or a model name) and a session to continue. A session can be
 * continued only by an agent that keeps one phaseloop can name, and only by
 * the same kind of agent that left it.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import type { AgentSpec, PhaseSpec } from "./spec.ts";
import { diag, esc, type RuleContext } from "./rule-context.ts";
import { PRESETS, presetNamed } from "./presets/registry.ts";

/** Why an agent cannot continue a session, or undefined when it can. */
export function sessionUnsupported(agent: AgentSpec): { severity: "error" | "warning"; message: string; hint: string } | undefined {
  if (agent.command) {
    if ((agent.output_format ?? "text") !== "text") return undefined;
    const formats = PRESETS.flatMap((p) => (p.outputFormat !== undefined ? [p.outputFormat] : []));
    return { severity: "warning", message: "a command agent with text output reports no session id: it gets the session to continue in PHASELOOP_SESSION only when an earlier phase's agent reported one", hint: `set output_format to the event stream the program prints (${formats.join(", ")})` };
  }
  const preset = presetNamed(agent.preset);
  if (preset?.sessions === false) return { severity: "error", message: `${preset.name} keeps no session phaseloop can continue (it reports no session id)`, hint: `use session: fresh, or an agent whose CLI continues sessions (${PRESETS.filter((p) => p.sessions).map((p) => p.name).join(", ")})` };
  return undefined;
}

/** The kind of program an agent runs: its preset, or `command`. */
function kindOf(agent: AgentSpec): string {
  return agent.command ? "command" : (agent.preset ?? "?");
}

export function checkAgentPhases(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const out: Diagnostic[] = [];
  const agents = doc.agents ?? {};
  const phases = doc.phases ?? {};
  const names = Object.keys(phases);
  for (const [name, phase] of Object.entries(phases)) {
    if (!phase || typeof phase !== "object" || typeof phase.agent !== "string") continue;
    const agent = agents[phase.agent];
    if (!agent) continue; // UNKNOWN_AGENT says so
    const base = `/phases/${esc(name)}`;
    if (typeof phase.model === "string" && agent.models && !Object.hasOwn(agent.models, phase.model)) {
      const near = didYouMean(phase.model, Object.keys(agent.models));
      if (near) out.push(diag(ctx, "MODEL_TIER", `${base}/model`, `"${phase.model}" is not a tier of agent "${phase.agent}": it is passed as a model name`, { severity: "warning", hint: `${near}; tiers: ${Object.keys(agent.models).join(", ")}` }));
    }
    out.push(...checkSession(ctx, name, phase, agent, names));
  }
  return out;
}

function checkSession(ctx: RuleContext, name: string, phase: PhaseSpec, agent: AgentSpec, names: string[]): Diagnostic[] {
  const session = phase.session;
  if (session === undefined || session === "fresh") return [];
  const ptr = `/phases/${esc(name)}/session`;
  const out: Diagnostic[] = [];
  const why = sessionUnsupported(agent);
  if (why) out.push(diag(ctx, "SESSION_UNSUPPORTED", ptr, `phase "${name}" continues a session, but ${why.message}`, { severity: why.severity, hint: why.hint }));
  if (typeof session !== "object" || typeof session.continue !== "string") return out;
  const from = session.continue;
  const other = ctx.doc.phases?.[from];
  if (!other) {
    out.push(diag(ctx, "UNKNOWN_PHASE", `${ptr}/continue`, `unknown phase "${from}"`, { hint: didYouMean(from, names) ?? `phases: ${names.join(", ")}` }));
    return out;
  }
  const otherAgent = typeof other.agent === "string" ? ctx.doc.agents?.[other.agent] : undefined;
  if (!otherAgent) {
    out.push(diag(ctx, "SESSION_MISMATCH", `${ptr}/continue`, `phase "${from}" runs no agent: it leaves no session to continue`, { hint: "name an agent phase" }));
  } else if (kindOf(otherAgent) !== kindOf(agent)) {
    out.push(diag(ctx, "SESSION_MISMATCH", `${ptr}/continue`, `phase "${from}" runs ${kindOf(otherAgent)} (agent "${other.agent}"), phase "${name}" runs ${kindOf(agent)}: a session continues only in the same kind of agent`, { hint: `give both phases agents of the same preset` }));
  }
  return out;
}
