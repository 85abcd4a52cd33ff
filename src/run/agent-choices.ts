/**
 * What an agent phase ran with, for its phase.started event and its
 * output.json: the model (and the tier it came from) and the session it
 * continued. Nothing for other phases.
 */
import type { CompiledPhase, Machine } from "../machine/types.ts";
import { artifactsRel } from "./run-artifacts.ts";
import type { PhaseRunEffect } from "./phase-invocation.ts";

export interface AgentChoices {
  model?: string | null;
  model_tier?: string;
  /** The session continued; null: a fresh one. */
  continued_session?: string | null;
}

export function agentChoices(phase: CompiledPhase, e: PhaseRunEffect): AgentChoices {
  if (phase.kind !== "agent") return {};
  return { model: phase.model ?? null, ...(phase.modelTier !== undefined ? { model_tier: phase.modelTier } : {}), continued_session: e.session ?? null };
}

/** What run.json records of them: each agent phase's model, and the artifacts folder. */
export function runModels(machine: Machine, runId: string): { models: Record<string, string>; artifacts: string } {
  const models: Record<string, string> = {};
  for (const p of machine.phases) if (p.kind === "agent" && p.model !== undefined) models[p.name] = p.model;
  return { models, artifacts: artifactsRel(runId) };
}
