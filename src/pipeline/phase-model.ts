/**
 * The model a phase runs with: its own `model` (a tier its agent defines under
 * `models`, else a model name), else its agent's `model`. A tier keeps shared
 * pipelines free of model names: a recipe says `small`, a team maps it.
 */
import type { AgentSpec } from "./spec.ts";

export interface PhaseModel {
  /** The model name passed to the agent; undefined leaves the choice to the agent. */
  model?: string;
  /** The tier the phase named, when it named one. */
  tier?: string;
}

export function phaseModel(agent: AgentSpec | undefined, model: string | undefined): PhaseModel {
  if (model === undefined) return agent?.model !== undefined ? { model: agent.model } : {};
  const tiers = agent?.models;
  if (tiers && Object.hasOwn(tiers, model) && typeof tiers[model] === "string") return { model: tiers[model], tier: model };
  return { model };
}
