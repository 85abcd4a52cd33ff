/**
 * The page's HTML: a shell that loads the bundled page (dist/ui-assets/, built
 * from src/ui-page/ by scripts/build.mjs) from the server, or, for `report
 * --html`, one file with the script, the style and the run's data inside.
 * Both forbid every request the page does not need with a
 * Content-Security-Policy; the report's allows no request at all.
 */
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { HostFiles } from "../host/host.ts";

export interface PageAsset {
  js: string;
  css: string;
}

const assets = new WeakMap<HostFiles, Promise<PageAsset | undefined>>();

/** The bundled page, read once (from these files); undefined when the package was not built. */
export function loadPageAsset(files: HostFiles): Promise<PageAsset | undefined> {
  let asset = assets.get(files);
  if (asset === undefined) {
    asset = (async () => {
      const base = new URL("../../dist/ui-assets/", import.meta.url);
      try {
        return { js: files.readText(fileURLToPath(new URL("page.js", base))), css: files.readText(fileURLToPath(new URL("page.css", base))) };
      } catch {
        return undefined;
      }
    })();
    assets.set(files, asset);
  }
  return asset;
}

export const LIVE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const FAVICON = `<link rel="icon" href="data:,">`;

/** The live page's shell: everything it loads comes from the same server. */
export function livePageHtml(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">${FAVICON}
<title>phaseloop</title><link rel="stylesheet" href="/assets/page.css"></head>
<body data-mode="live"><div id="app"></div><script src="/assets/page.js"></script></body></html>
`;
}

/** JSON that can sit inside a <script> element: nothing in it can close the element. */
export function inlineJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

const sha256 = (text: string): string => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/** One self-contained file: the page's script and style inline (allowed by hash), the data as JSON. */
export function reportHtml(asset: PageAsset, data: unknown, title: string): string {
  const js = asset.js.replace(/<\/script/gi, "<\\/script");
  const css = asset.css.replace(/<\/style/gi, "<\\/style");
  const csp = `default-src 'none'; script-src ${sha256(js)}; style-src ${sha256(css)}; img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'`;
  const escaped = title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="referrer" content="no-referrer">${FAVICON}
<title>${escaped}</title><style>${css}</style></head>
<body data-mode="report"><div id="app"></div>
<script type="application/json" id="run-data">${inlineJson(data)}</script>
<script>${js}</script></body></html>
`;
}
