/**
 * The shared setup of the contract suites of CLIs that speak to an OpenAI-compatible
 * chat-completions API (opencode, Qwen Code): a one-phase pipeline naming the mock with
 * `base_url`, a git workdir with a .gitignore under the default `sandbox: auto`, and a private
 * HOME holding the user's own settings file of the CLI.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { startChatMock, type ChatMock, type ChatTurn } from "./chat-completions-mock.ts";
import { commitAll, contractPipeline, contractSuite, gitWorkdir, pathWith, runPipeline, type PipelineSetup, type RunOutcome } from "./contract-helpers.ts";

export interface ChatSetup extends PipelineSetup {
  /** The user's own settings file of the CLI (at the suite's `userConfigPath` in HOME). */
  userConfig?: Record<string, unknown>;
  /** The agent's own `env` (a YAML flow mapping's entries). */
  agentEnv?: Record<string, string>;
  /** Files in the private HOME. */
  homeFiles?: Record<string, string>;
}

export interface ChatOutcome extends RunOutcome {
  dir: string;
  home: string;
  mock: ChatMock;
}

/**
 * The suite's `run`: the one-phase pipeline run once against a mock scripted with `turns` (a
 * function gets the workdir). Call it at the top of a test file (it registers the suite's hooks).
 */
export function chatContract(preset: string, bin: string | undefined, userConfigPath: string): (turns: ChatTurn[] | ((dir: string) => ChatTurn[]), s?: ChatSetup) => Promise<ChatOutcome> {
  const track = contractSuite();
  return async (turns, s = {}) => {
    const mock = track(await startChatMock([]));
    const spec = `{ preset: ${preset}, model: mock-model, base_url: "${mock.url}"${s.agentEnv ? `, env: ${JSON.stringify(s.agentEnv)}` : ""} }`;
    const p = contractPipeline(preset, spec, { ...s, phase: s.phase ?? "    timeout: 3m\n" });
    const { top, dir } = gitWorkdir(`phaseloop-${preset}-`, { "p.yaml": p, ".gitignore": "node_modules/\n", "src/a.ts": "export const a = 1;\n", ...(s.files ?? {}) }, { beside: true, commit: false });
    const home = join(top, "home");
    mkdirSync(dirname(join(home, userConfigPath)), { recursive: true });
    if (s.userConfig) writeFileSync(join(home, userConfigPath), JSON.stringify(s.userConfig));
    for (const [rel, text] of Object.entries(s.homeFiles ?? {})) {
      mkdirSync(dirname(join(home, rel)), { recursive: true });
      writeFileSync(join(home, rel), text);
    }
    mock.script(typeof turns === "function" ? turns(dir) : turns);
    commitAll(dir);
    const o = await runPipeline(dir, { PATH: pathWith(bin), HOME: home, OPENAI_API_KEY: "sk-test", NO_COLOR: "1" });
    return { ...o, dir, home, mock };
  };
}
