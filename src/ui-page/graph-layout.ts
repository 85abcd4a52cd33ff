/**
 * A layered drawing of the machine graph, small enough to ship with the page:
 * edges that go back (the loop's return to its head) are found by a walk
 * from `start` and turned around, nodes get the rank of their longest path
 * from `start`, each rank is ordered by the mean place of its nodes'
 * predecessors (two sweeps), and back edges are drawn around the side.
 * Pure: no DOM.
 */

export interface LayoutNode {
  id: string;
  lines: string[];
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface LayoutEdge {
  /** The edge's index in the input. */
  i: number;
  from: string;
  to: string;
  back: boolean;
  /** An SVG path. */
  d: string;
  /** Where its label goes. */
  lx: number;
  ly: number;
}

export interface Layout {
  nodes: Map<string, LayoutNode>;
  edges: LayoutEdge[];
  width: number;
  height: number;
}

const CHAR = 7.4;
const LINE = 15;
const GAP_X = 36;
const GAP_Y = 52;
const PAD = 24;

export function layoutGraph(nodes: { id: string; label: string[] }[], edges: { from: string; to: string }[]): Layout {
  const ids = nodes.map((n) => n.id);
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of edges) if (out.has(e.from) && out.has(e.to) && e.from !== e.to) out.get(e.from)!.push(e.to);
  // back edges: those that reach a node still on the walk's stack
  const state = new Map<string, 1 | 2>();
  const back = new Set<string>();
  const order: string[] = [];
  const walk = (root: string): void => {
    const stack: { id: string; i: number }[] = [{ id: root, i: 0 }];
    state.set(root, 1);
    order.push(root);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const next = out.get(top.id)![top.i++];
      if (next === undefined) {
        state.set(top.id, 2);
        stack.pop();
      } else if (state.get(next) === 1) back.add(`${top.id}>${next}`);
      else if (state.get(next) === undefined) {
        state.set(next, 1);
        order.push(next);
        stack.push({ id: next, i: 0 });
      }
    }
  };
  if (out.has("start")) walk("start");
  for (const id of ids) if (!state.has(id)) walk(id);

  // ranks: longest path over the forward edges, in walk order (a topological order of them)
  const rank = new Map<string, number>(ids.map((id) => [id, 0]));
  const preds = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const [from, tos] of out) for (const to of tos) if (!back.has(`${from}>${to}`)) preds.get(to)!.push(from);
  for (let pass = 0; pass < ids.length; pass++) {
    let changed = false;
    for (const id of order) for (const p of preds.get(id)!) if (rank.get(p)! + 1 > rank.get(id)!) {
      rank.set(id, rank.get(p)! + 1);
      changed = true;
    }
    if (!changed) break;
  }
  const layers: string[][] = [];
  for (const id of order) (layers[rank.get(id)!] ??= []).push(id);
  const pos = new Map<string, number>();
  const place = () => layers.forEach((layer) => layer?.forEach((id, i) => pos.set(id, i)));
  place();
  for (let sweep = 0; sweep < 2; sweep++) {
    for (const layer of layers) {
      if (!layer) continue;
      const key = (id: string) => {
        const ps = preds.get(id)!;
        return ps.length === 0 ? pos.get(id)! : ps.reduce((a, p) => a + pos.get(p)!, 0) / ps.length;
      };
      layer.sort((a, b) => key(a) - key(b));
      layer.forEach((id, i) => pos.set(id, i));
    }
  }

  const byId = new Map(nodes.map((n) => [n.id, n]));
  const boxes = new Map<string, LayoutNode>();
  const widths = layers.map((layer) => (layer ?? []).reduce((a, id) => a + sizeOf(byId.get(id)!.label).w + GAP_X, -GAP_X));
  const width = Math.max(200, ...widths) + PAD * 2 + 80;
  let y = PAD;
  layers.forEach((layer, r) => {
    if (!layer) return;
    let x = PAD + (width - 80 - PAD * 2 - widths[r]!) / 2;
    let tallest = 0;
    for (const id of layer) {
      const { w, h } = sizeOf(byId.get(id)!.label);
      boxes.set(id, { id, lines: byId.get(id)!.label, x, y, w, h });
      x += w + GAP_X;
      tallest = Math.max(tallest, h);
    }
    y += tallest + GAP_Y;
  });

  const laid: LayoutEdge[] = [];
  edges.forEach((e, i) => {
    const a = boxes.get(e.from);
    const b = boxes.get(e.to);
    if (!a || !b) return;
    const isBack = back.has(`${e.from}>${e.to}`) || e.from === e.to;
    if (isBack) {
      // around the right side, from the source's right to the target's right
      const x1 = a.x + a.w;
      const y1 = a.y + a.h / 2;
      const x2 = b.x + b.w;
      const y2 = b.y + b.h / 2;
      const side = Math.max(x1, x2) + 40 + (Math.abs(y1 - y2) / 20);
      laid.push({ i, from: e.from, to: e.to, back: true, d: `M${x1},${y1} C${side},${y1} ${side},${y2} ${x2 + 2},${y2}`, lx: side - 6, ly: (y1 + y2) / 2 });
    } else {
      const x1 = a.x + a.w / 2;
      const y1 = a.y + a.h;
      const x2 = b.x + b.w / 2;
      const y2 = b.y;
      const my = (y1 + y2) / 2;
      laid.push({ i, from: e.from, to: e.to, back: false, d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2 - 2}`, lx: (x1 + x2) / 2, ly: my });
    }
  });
  return { nodes: boxes, edges: laid, width, height: y - GAP_Y + PAD };
}

function sizeOf(lines: string[]): { w: number; h: number } {
  const shown = lines.slice(0, 2);
  const w = Math.max(60, ...shown.map((l, i) => Math.min(l.length, 40) * (i === 0 ? CHAR : CHAR - 0.6))) + 24;
  return { w, h: 12 + shown.length * LINE };
}
