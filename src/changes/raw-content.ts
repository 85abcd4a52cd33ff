/**
 * Whether git compares a work-tree file with its index entry byte for byte:
 * no attributes file that could name a filter or an end-of-line conversion,
 * no configuration that converts line ends, ignores the executable bit or
 * symlinks, or folds case. Only then may the stat watch judge a changed file
 * itself. The answer is kept while none of the files it was read from (the
 * configuration files, the attributes and ignore files outside the work tree) changes.
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { Host } from "../host/host.ts";
import { statText } from "./stat-watch.ts";

export interface RawContent {
  /** True when git compares raw bytes and modes. */
  raw: boolean;
  /** Files whose change changes the answer or git's ignore rules (absent ones included: being made changes it too). */
  sources: string[];
}

/** Settings under which git does not compare a file's raw bytes and mode; `true` when any value but false counts. */
const NOT_RAW: Record<string, (value: string) => boolean> = {
  "core.autocrlf": (v) => !isFalse(v),
  "core.eol": () => true,
  "core.attributesfile": () => true,
  "core.filemode": (v) => !isTrue(v),
  "core.symlinks": (v) => !isTrue(v),
  "core.ignorecase": (v) => !isFalse(v),
  "core.precomposeunicode": (v) => !isFalse(v),
};

const isTrue = (v: string) => ["true", "yes", "on", "1", ""].includes(v.toLowerCase());
const isFalse = (v: string) => ["false", "no", "off", "0"].includes(v.toLowerCase());

/**
 * Whether git compares raw content under this `git config -l -z --show-origin` listing (run
 * in `cwd`); pure apart from resolving origins against `cwd`. Returns the files it was read from.
 */
export function parseRawContent(listing: string, cwd: string, env: Readonly<Record<string, string | undefined>> = {}): RawContent {
  let raw = true;
  const sources = new Set<string>();
  const fields = listing.split("\0");
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i]!;
    const entry = fields[i + 1]!;
    if (origin.startsWith("file:")) {
      const file = origin.slice(5);
      sources.add(isAbsolute(file) ? file : resolve(cwd, file));
    }
    const nl = entry.indexOf("\n");
    const key = (nl < 0 ? entry : entry.slice(0, nl)).toLowerCase();
    const value = nl < 0 ? "" : entry.slice(nl + 1);
    const rule = NOT_RAW[key];
    if (rule?.(value)) raw = false;
    // the user's own ignore rules: a change there changes what git lists
    if (key === "core.excludesfile" && value) sources.add(value.startsWith("~/") ? join(homeDir(env), value.slice(2)) : resolve(cwd, value));
  }
  return { raw, sources: [...sources] };
}

const homeDir = (env: Readonly<Record<string, string | undefined>>) => env.HOME ?? homedir();

/** The configuration, ignore and attributes files git may read for this repository, whether or not they exist. */
function candidateFiles(env: Readonly<Record<string, string | undefined>>, gitDir: string, commonDir: string): string[] {
  const home = homeDir(env);
  const xdg = env.XDG_CONFIG_HOME || join(home, ".config");
  return [
    join(xdg, "git", "ignore"),
    join(commonDir, "config"),
    join(gitDir, "config.worktree"),
    env.GIT_CONFIG_GLOBAL ?? join(home, ".gitconfig"),
    join(xdg, "git", "config"),
    env.GIT_CONFIG_SYSTEM ?? "/etc/gitconfig",
    // attributes files outside the work tree: any of them present, and git may convert
    join(commonDir, "info", "attributes"),
    join(xdg, "git", "attributes"),
    "/etc/gitattributes",
  ];
}

const ATTRIBUTES_FILES = 3; // the last three candidates

const known = new Map<string, { stats: string; answer: RawContent }>();

/**
 * Whether git compares raw content in this repository, with the files the answer depends on;
 * `listConfig` runs `git config -l -z --show-origin` in `cwd`, only when one of those files
 * changed since the last answer.
 */
export function comparesRawContent(host: Host, repo: { gitDir: string; commonDir: string }, cwd: string, listConfig: () => string | undefined): RawContent {
  const candidates = candidateFiles(host.env, repo.gitDir, repo.commonDir);
  const key = `${repo.gitDir}\0${cwd}`;
  const was = known.get(key);
  const statsOf = (files: string[]) => files.map((f) => statText(host.files, f)).join("|");
  if (was && statsOf(was.answer.sources) === was.stats) return was.answer;
  const before = statsOf(candidates);
  const listing = listConfig();
  if (listing === undefined) return { raw: false, sources: [] };
  const parsed = parseRawContent(listing, cwd, host.env);
  const sources = [...new Set([...candidates, ...parsed.sources])];
  const attributes = candidates.slice(-ATTRIBUTES_FILES).some((f) => statText(host.files, f) !== "absent");
  const answer = { raw: parsed.raw && !attributes, sources };
  // config read from the command line or the environment is the same for the whole process;
  // a file that changed while git read it leaves the answer unkept
  if (statsOf(candidates) === before) known.set(key, { stats: statsOf(sources), answer });
  return answer;
}
