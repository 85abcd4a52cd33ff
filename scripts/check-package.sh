#!/usr/bin/env bash
# phaseloop used from another repository, as its users will: the package packed
# with `npm pack` and installed into a fresh repository next to a recipe package
# of a made-up team, then `npx phaseloop recipes / init / init --extends /
# validate / run` on Node and the same on Deno; then installed from a git URL.
# Needs the npm registry for phaseloop's own dependencies; nothing else.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DENO="$ROOT/node_modules/.bin/deno"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
say() { printf '  -- %s\n' "$*"; }
fail() { printf '!!! %s\n' "$*" >&2; exit 1; }
NPM_QUIET=(--no-audit --no-fund --loglevel=error)

say "npm pack"
(cd "$ROOT" && npm pack --pack-destination "$WORK" --loglevel=error >/dev/null)
TARBALL="$(ls "$WORK"/phaseloop-*.tgz)"

say "a team's recipe package, packed too"
mkdir -p "$WORK/acme/pipelines/prompts"
cat >"$WORK/acme/package.json" <<'EOF'
{ "name": "@acme/loops", "version": "1.2.0", "files": ["pipelines"],
  "exports": { "./*.yaml": "./pipelines/*.yaml", "./package.json": "./package.json" },
  "phaseloop": { "recipes": "pipelines" } }
EOF
cat >"$WORK/acme/pipelines/count.yaml" <<'EOF'
phaseloop: 1
name: count
description: Count to a number, one line per iteration, then stop
include: [./agents.yaml]
params:
  to: { type: integer, default: 3 }
phases:
  step:
    agent: counter
    prompt: prompts/step.md
  check:
    run: [sh, -c, 'test "$(wc -l < count.txt)" -ge {{ params.to }}']
    success_exit_codes: [0, 1]
    next:
      - if: phases.check.exit_code == 0
        stop: complete
stop: { max_iterations: 10 }
EOF
cat >"$WORK/acme/pipelines/agents.yaml" <<'EOF'
agents:
  counter: { command: [sh, -c, 'echo x >> count.txt'] }
EOF
echo "Add one line." >"$WORK/acme/pipelines/prompts/step.md"
(cd "$WORK/acme" && npm pack --loglevel=error >/dev/null)
ACME="$(ls "$WORK"/acme/acme-loops-*.tgz)"

say "a fresh repository installs both"
REPO="$WORK/repo"
mkdir -p "$REPO" && cd "$REPO"
git init -q . && npm init -y >/dev/null
npm install "${NPM_QUIET[@]}" "$TARBALL" "$ACME"

for runtime in node deno; do
  say "on $runtime"
  if [ "$runtime" = node ]; then pl() { npx --no-install phaseloop "$@"; }; else pl() { "$DENO" run -A --cached-only npm:phaseloop "$@"; }; fi
  rm -rf pipelines loops team count.txt hailstone.txt .phaseloop
  pl --version
  pl recipes | grep -q '^@acme/loops/count ' || fail "phaseloop recipes does not list @acme/loops/count"
  pl recipes | grep -q '^hailstone ' || fail "phaseloop recipes does not list hailstone"
  pl init >/dev/null
  pl init hailstone >/dev/null
  pl init @acme/loops/count >/dev/null
  pl init --extends @acme/loops/count --dir loops >/dev/null
  pl init --extends hailstone --dir loops >/dev/null
  grep -q '^extends: "@acme/loops/count.yaml"$' loops/count.yaml || fail "init --extends did not name the package file"
  grep -q 'schema=../node_modules/phaseloop/schemas/pipeline.schema.json$' pipelines/ralph.yaml || fail "init wrote a \$schema line that does not resolve"
  test -f "$(dirname pipelines/ralph.yaml)/$(sed -n 's/.*\$schema=//p' pipelines/ralph.yaml | head -1)" || fail "the \$schema path does not exist"
  mkdir -p team
  printf 'agents:\n  counter: { command: [sh, -c, "echo y >> count.txt"] }\n' >team/agents.yaml
  cat >ours.yaml <<'EOF'
phaseloop: 1
name: ours
extends: "@acme/loops/count.yaml"
include: [./team/agents.yaml]
params: { to: { default: 2 } }
EOF
  pl validate pipelines/ralph.yaml pipelines/hailstone.yaml pipelines/count.yaml loops/*.yaml ours.yaml
  pl validate --print ours.yaml | grep -q 'echo y >> count.txt' || fail "validate --print does not show the merged agent"
  pl run ours.yaml --reporter plain | tail -1
  test "$(wc -l <count.txt)" = 2 || fail "ours.yaml did not count to 2"
  pl run loops/hailstone.yaml --reporter plain | tail -1
  # the run of ours.yaml (two runs may start in the same second: run ids then sort by their random part)
  python3 -c 'import json,glob,sys; runs=[json.load(open(p)) for p in glob.glob(".phaseloop/runs/*/run.json")]; f=[x for r in runs if r.get("pipeline")=="ours" for x in r.get("files",[])]; sys.exit(0 if any(x.get("package")=="@acme/loops" and x.get("version")=="1.2.0" for x in f) else 1)' ||
    fail "run.json does not record the package's version"
  # a broken base is reported in the base, with the chain
  cp -r node_modules/@acme/loops "$WORK/acme-backup"
  sed -i 's/phases.check.exit_code/phases.chek.exit_code/' node_modules/@acme/loops/pipelines/count.yaml
  out="$(pl validate ours.yaml 2>&1 || true)"
  echo "$out" | grep -q '^node_modules/@acme/loops/pipelines/count.yaml:15:20: error EXPR_UNKNOWN_PHASE' || { echo "$out"; fail "the error is not located in the base"; }
  echo "$out" | grep -q 'note: extended by ours.yaml (ours.yaml:3:10)' || { echo "$out"; fail "the chain is missing"; }
  rm -rf node_modules/@acme/loops && mv "$WORK/acme-backup" node_modules/@acme/loops
done

say "installed from a git URL"
GITREPO="$WORK/git"
mkdir -p "$GITREPO" && cd "$GITREPO"
npm init -y >/dev/null
npm install "${NPM_QUIET[@]}" "git+file://$ROOT#$(git -C "$ROOT" rev-parse HEAD)"
npx --no-install phaseloop init hailstone >/dev/null
npx --no-install phaseloop validate pipelines/hailstone.yaml
npx --no-install phaseloop run pipelines/hailstone.yaml --reporter plain | tail -1
echo "package: ok"
