/**
 * The page's live feed, as server-sent events. A page subscribes to the runs
 * list, to one run, or both; it first gets the whole of each (`runs`, `run`)
 * and then only what changed: the new lines of the run's event log
 * (`events`), the new output of its running phases (`output`), whether a
 * process still runs it (`live`). A page that reconnects starts over from a
 * whole snapshot, so nothing is lost in between. What a page is sent is
 * bounded: a log far behind is read a chunk per change, output from its end.
 */
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { EventLineSplitter, isRunLive, readLock, runsDir } from "../records/run-log.ts";
import type { RunEvent } from "../run/run-events.ts";
import { machineName } from "../runtime/run-lock.ts";
import { readRunGraph } from "./run-graph.ts";
import { rootRunOf } from "./run-key.ts";
import { listRunRows, readFrom, readInflight, readRunView, runFolder, stateOfView, type RunRow } from "./read-runs.ts";
import { RunsWatcher } from "./watch-runs.ts";

interface Follow {
  dir: string;
  offsets: { stdout: number; stderr: number };
  /** The phase finished: read what is left once more, then stop. */
  ending: boolean;
}

interface Client {
  res: ServerResponse;
  list: boolean;
  key: string | null;
  offset: number;
  splitter: EventLineSplitter;
  live: boolean | null;
  inflight: string;
  follows: Map<string, Follow>;
  busy: boolean;
}

/** Bytes of a log sent in one message at most; the rest goes with the next change. */
const EVENTS_CHUNK = 512 * 1024;
/** A page that reads slower than this much is behind is dropped (it reconnects and starts over). */
const BACKLOG_MAX = 8 * 1024 * 1024;
/** Output sent at first from a running phase's logs: their end. */
const OUTPUT_TAIL = 16 * 1024;

export class LiveFeed {
  private readonly clients = new Set<Client>();
  private readonly watcher: RunsWatcher;
  private rows: RunRow[] = [];
  private rowsJson = "";
  private listing: Promise<void> | undefined;
  private readonly host = machineName();

  private readonly workdir: string;
  private readonly machine: Host;

  constructor(workdir: string, machine: Host) {
    this.workdir = workdir;
    this.machine = machine;
    this.watcher = new RunsWatcher(() => void this.tick(), machine);
    this.reconcile();
  }

  get watchedFolders(): number {
    return this.watcher.size;
  }

  /** Starts a feed on a response: `list` for the runs list, `key` for one run. */
  async subscribe(res: ServerResponse, list: boolean, key: string | null): Promise<void> {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write("retry: 1000\n\n");
    const client: Client = { res, list, key, offset: 0, splitter: new EventLineSplitter(), live: null, inflight: "", follows: new Map(), busy: true };
    this.clients.add(client);
    res.on("close", () => this.clients.delete(client));
    const keepAlive = setInterval(() => res.write(": \n\n"), 15_000);
    keepAlive.unref?.();
    res.on("close", () => clearInterval(keepAlive));
    try {
      if (list) {
        await this.refreshRows();
        send(client, "runs", this.rows);
      }
      if (key !== null) await this.sendRun(client, key);
    } finally {
      client.busy = false;
    }
    this.reconcile();
  }

  private async sendRun(client: Client, key: string): Promise<void> {
    const read = await readRunView(this.workdir, key, this.machine);
    if (read === undefined) {
      send(client, "missing", { key });
      return;
    }
    const graph = await readRunGraph(read.file, read.view.phases, this.workdir, this.machine.files);
    client.offset = read.offset;
    client.live = read.live;
    const inflight = read.live ? readInflight(this.workdir, key, this.machine.files) : null;
    client.inflight = JSON.stringify(inflight);
    send(client, "run", { view: read.view, live: read.live, state: stateOfView(read.view, read.live), graph, problem: read.problem ?? null, inflight });
    for (const p of inflight?.phases ?? []) this.follow(client, p.dir, true);
    await this.sendOutput(client);
  }

  private follow(client: Client, dir: string, fromEnd: boolean): void {
    if (client.follows.has(dir)) return;
    // at first the end of what is there; a phase that starts now from its beginning
    const start = fromEnd ? -1 : 0;
    client.follows.set(dir, { dir, offsets: { stdout: start, stderr: start }, ending: false });
  }

  private async sendOutput(client: Client): Promise<void> {
    if (client.key === null) return;
    const folder = runFolder(this.workdir, client.key);
    if (folder === undefined) return;
    for (const f of [...client.follows.values()]) {
      for (const stream of ["stdout", "stderr"] as const) {
        const path = join(folder, "phases", f.dir, `${stream}.log`);
        const from = f.offsets[stream];
        const got = await readFrom(path, from < 0 ? Number.MAX_SAFE_INTEGER : from, this.machine.files, from < 0 ? OUTPUT_TAIL : 64 * 1024);
        if (got === undefined) continue;
        if (from < 0) {
          // first look: the end of the log, from a line's start
          const cut = got.text.indexOf("\n");
          f.offsets[stream] = got.offset;
          const text = cut >= 0 && got.text.length >= OUTPUT_TAIL ? got.text.slice(cut + 1) : got.text;
          if (text !== "") send(client, "output", { dir: f.dir, stream, text });
          continue;
        }
        f.offsets[stream] = got.offset;
        if (got.text !== "") send(client, "output", { dir: f.dir, stream, text: got.text });
      }
      if (f.ending) client.follows.delete(f.dir);
    }
  }

  private ticking = false;
  private again = false;

  private async tick(): Promise<void> {
    if (this.clients.size === 0) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      do {
        this.again = false;
        await this.step();
      } while (this.again);
    } finally {
      this.ticking = false;
    }
  }

  private async step(): Promise<void> {
    if ([...this.clients].some((c) => c.list)) {
      const before = this.rowsJson;
      await this.refreshRows();
      if (this.rowsJson !== before) for (const c of this.clients) if (c.list && !c.busy) send(c, "runs", this.rows);
    }
    for (const c of this.clients) if (c.key !== null && !c.busy) await this.advance(c);
    this.reconcile();
  }

  /** A run's new events and output since the last look. */
  private async advance(client: Client): Promise<void> {
    const key = client.key!;
    client.busy = true;
    try {
      const folder = runFolder(this.workdir, key)!;
      const got = await readFrom(join(folder, "events.jsonl"), client.offset, this.machine.files, EVENTS_CHUNK);
      if (got !== undefined && got.offset < client.offset) {
        // the log was replaced: start over
        await this.sendRun(client, key);
        return;
      }
      if (got !== undefined && got.text !== "") {
        const events: RunEvent[] = [];
        client.splitter.push(new TextEncoder().encode(got.text), (e) => events.push(e));
        client.offset = got.offset;
        if (events.length > 0) send(client, "events", events);
      }
      const live = await isRunLive(this.workdir, rootRunOf(key), this.host, this.machine);
      // what runs now is in the checkpoint (the log has a phase once it has finished): follow its output
      const inflight = live ? readInflight(this.workdir, key, this.machine.files) : null;
      const now = new Set((inflight?.phases ?? []).map((p) => p.dir));
      for (const dir of now) this.follow(client, dir, false);
      for (const f of client.follows.values()) if (!now.has(f.dir)) f.ending = true;
      const json = JSON.stringify(inflight);
      if (json !== client.inflight) {
        client.inflight = json;
        send(client, "inflight", inflight);
      }
      await this.sendOutput(client);
      if (live !== client.live) {
        client.live = live;
        send(client, "live", { live });
      }
    } finally {
      client.busy = false;
    }
  }

  private refreshRows(): Promise<void> {
    this.listing ??= (async () => {
      try {
        this.rows = await listRunRows(this.workdir, this.machine);
        this.rowsJson = JSON.stringify(this.rows);
      } finally {
        this.listing = undefined;
      }
    })();
    return this.listing;
  }

  /** Watches what can change: the runs folder, the lock, unfinished runs, the runs and phases pages follow. */
  private reconcile(): void {
    const runs = runsDir(this.workdir);
    const folders = new Set<string>([join(this.workdir, ".phaseloop"), runs]);
    // before the first run there is no .phaseloop to watch: the workdir says when it appears
    if (!this.machine.files.exists(runs)) folders.add(this.workdir);
    for (const r of this.rows) if (r.depth === 0 && !FINAL.has(r.state)) folders.add(join(runs, r.key));
    for (const c of this.clients) {
      if (c.key === null) continue;
      const folder = runFolder(this.workdir, c.key);
      if (folder === undefined) continue;
      folders.add(folder);
      folders.add(join(folder, "phases"));
      for (const f of c.follows.values()) folders.add(join(folder, "phases", f.dir));
    }
    this.watcher.setFolders(this.clients.size === 0 ? [] : folders);
  }

  /** Whose lock is held now (for the controls: a run must not be stopped twice). */
  lock(): ReturnType<typeof readLock> {
    return readLock(this.workdir, this.machine.files);
  }

  close(): void {
    this.watcher.close();
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }
}

const FINAL = new Set(["complete", "failed", "blocked", "stopped"]);

function send(client: Client, event: string, data: unknown): void {
  const res = client.res;
  if (res.writableLength > BACKLOG_MAX) {
    res.destroy();
    return;
  }
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
