/**
 * What a V8 heap snapshot of the app holds, and what grew between two snapshots (docs/benchmarks.md, "What holds
 * the peak"): objects grouped by constructor name (internal kinds in parentheses, e.g. "(string)", "(compiled
 * code)"), their count and self size, and for the groups that grew most and for the largest single objects, the
 * path by which they are held: the chain of retainers towards the GC roots along the shortest distance, as Chrome
 * DevTools' "Retainers" view shows it (`Map.table <- (closure) running.context <- ...`).
 *
 *   node --import tsx bench/heap-snapshots.ts AFTER.heapsnapshot [BEFORE.heapsnapshot] [--top N]
 *
 * Snapshots come from `bench/profile.ts --memory --snapshots DIR` (the app's `v8.writeHeapSnapshot()` through the
 * inspector), or from any `node --heapsnapshot-signal=SIGUSR2` process. A snapshot holds only what is alive: V8
 * collects all garbage before writing it, so the difference between `heapUsed` just before a snapshot and the
 * snapshot's total is garbage that V8 had not collected yet. Reads the files only; prints text. Exit codes: 0 done;
 * 1 a file cannot be read or parsed; 2 bad arguments.
 */
import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";
import { renderTable } from "./report";

/** The parts of the .heapsnapshot JSON this reads (V8's format, `snapshot.meta` names the fields). */
interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A parsed snapshot: node and edge columns as typed arrays, and the reverse edges for retainer walks. */
interface Snapshot {
  readonly file: string;
  readonly nodeCount: number;
  readonly group: readonly string[];
  readonly selfSize: Float64Array;
  /** For node i, its retainers are retainerNode[retainerStart[i] .. retainerStart[i + 1]), with the edge's label. */
  readonly retainerStart: Int32Array;
  readonly retainerNode: Int32Array;
  readonly retainerLabel: readonly string[];
  /** Edges from the root (node 0) to node i along strong edges; -1 when unreachable that way. */
  readonly distance: Int32Array;
}

/** Longest group name kept: constructor names are short; a string's "name" is its text, which is not a group. */
const GROUP_NAME_CHARS_MAX = 60;
/** Groups, objects and paths printed by default: the tail is small objects spread over many kinds. */
const DEFAULT_TOP = 20;
/** Steps of a retainer path printed: four name the holder (a module's variable, a cache's field) in practice. */
const PATH_STEPS_MAX = 5;
/** Distinct paths shown per grown group: the three commonest hold most of a group in every snapshot read so far. */
const PATHS_PER_GROUP = 3;

const say = (line: string) => process.stderr.write(`${line}\n`);

/** The group of a node: its constructor for objects, an internal kind in parentheses otherwise. */
function groupOf(type: string, name: string): string {
  switch (type) {
    case "object":
    case "native":
      return name.slice(0, GROUP_NAME_CHARS_MAX) || "(anonymous object)";
    case "closure":
      return "(closure)";
    case "string":
    case "concatenated string":
    case "sliced string":
      return "(string)";
    case "code":
      return "(compiled code)";
    case "hidden":
      return `(system) ${name.replace(/^system \/ /, "").slice(0, GROUP_NAME_CHARS_MAX)}`;
    case "array":
      return name ? `(array) ${name.slice(0, GROUP_NAME_CHARS_MAX)}` : "(array)";
    default:
      return `(${type})`;
  }
}

/**
 * Parses a .heapsnapshot file into columns, its reverse edges and each node's distance from the root. Throws when
 * the file is not a V8 heap snapshot.
 */
function readSnapshot(file: string): Snapshot {
  const raw = JSON.parse(readFileSync(file, "utf8")) as RawSnapshot;
  const meta = raw.snapshot.meta;
  const nodeFieldCount = meta.node_fields.length;
  const edgeFieldCount = meta.edge_fields.length;
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ["type", "name", "self_size", "edge_count"].map((field) =>
    meta.node_fields.indexOf(field),
  ) as [number, number, number, number];
  const [edgeTypeAt, edgeNameAt, toNodeAt] = ["type", "name_or_index", "to_node"].map((field) =>
    meta.edge_fields.indexOf(field),
  ) as [number, number, number];
  const nodeCount = raw.nodes.length / nodeFieldCount;
  const group: string[] = new Array(nodeCount);
  const selfSize = new Float64Array(nodeCount);
  const firstEdge = new Int32Array(nodeCount + 1);
  for (let node = 0, edge = 0; node < nodeCount; node++) {
    const base = node * nodeFieldCount;
    group[node] = groupOf(nodeTypes[raw.nodes[base + typeAt]!]!, raw.strings[raw.nodes[base + nameAt]!]!);
    selfSize[node] = raw.nodes[base + sizeAt]!;
    firstEdge[node] = edge;
    edge += raw.nodes[base + edgeCountAt]!;
    firstEdge[node + 1] = edge;
  }
  const edgeCount = raw.edges.length / edgeFieldCount;
  // Weak edges do not keep anything alive; shortcuts are DevTools' summaries of paths that exist as other edges.
  const strong = (type: string) => type !== "weak" && type !== "shortcut";
  const retainerCount = new Int32Array(nodeCount + 1);
  for (let edge = 0; edge < edgeCount; edge++) {
    const base = edge * edgeFieldCount;
    if (!strong(edgeTypes[raw.edges[base + edgeTypeAt]!]!)) continue;
    retainerCount[raw.edges[base + toNodeAt]! / nodeFieldCount]! += 1;
  }
  const retainerStart = new Int32Array(nodeCount + 1);
  for (let node = 0; node < nodeCount; node++) retainerStart[node + 1] = retainerStart[node]! + retainerCount[node]!;
  const fill = retainerStart.slice(0, nodeCount);
  const retainerNode = new Int32Array(retainerStart[nodeCount]!);
  const retainerLabel: string[] = new Array(retainerStart[nodeCount]!);
  const distance = new Int32Array(nodeCount).fill(-1);
  distance[0] = 0;
  const queue = new Int32Array(nodeCount);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  for (let from = 0; from < nodeCount; from++) {
    for (let edge = firstEdge[from]!; edge < firstEdge[from + 1]!; edge++) {
      const base = edge * edgeFieldCount;
      const type = edgeTypes[raw.edges[base + edgeTypeAt]!]!;
      if (!strong(type)) continue;
      const to = raw.edges[base + toNodeAt]! / nodeFieldCount;
      const nameOrIndex = raw.edges[base + edgeNameAt]!;
      const slot = fill[to]!++;
      retainerNode[slot] = from;
      // Indices (also a table's numbered internal slots) are left out so that the entries of one array, Map or Set
      // share a path.
      const name = type === "element" || type === "hidden" ? "" : String(raw.strings[nameOrIndex]);
      retainerLabel[slot] = name === "" || /^\d+$/.test(name) ? "[]" : name;
    }
  }
  // Breadth-first from the root along strong edges: the retainer nearest the root is the one that holds a node.
  while (head < tail) {
    const from = queue[head++]!;
    for (let edge = firstEdge[from]!; edge < firstEdge[from + 1]!; edge++) {
      const base = edge * edgeFieldCount;
      if (!strong(edgeTypes[raw.edges[base + edgeTypeAt]!]!)) continue;
      const to = raw.edges[base + toNodeAt]! / nodeFieldCount;
      if (distance[to] !== -1) continue;
      distance[to] = distance[from]! + 1;
      queue[tail++] = to;
    }
  }
  return { file, nodeCount, group, selfSize, retainerStart, retainerNode, retainerLabel, distance };
}

/** Count and self bytes per group. */
function groupTotals(snapshot: Snapshot): Map<string, { count: number; bytes: number }> {
  const totals = new Map<string, { count: number; bytes: number }>();
  for (let node = 0; node < snapshot.nodeCount; node++) {
    const key = snapshot.group[node]!;
    const entry = totals.get(key) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += snapshot.selfSize[node]!;
    totals.set(key, entry);
  }
  return totals;
}

/**
 * The path that holds `node`: at each step the retainer nearest the root, written `Group.edge` (the edge of the
 * retainer that points at the previous step), up to {@link PATH_STEPS_MAX} steps.
 */
function holdingPath(snapshot: Snapshot, node: number): string {
  const steps: string[] = [];
  let current = node;
  for (let step = 0; step < PATH_STEPS_MAX; step++) {
    let best = -1;
    let bestSlot = -1;
    for (let slot = snapshot.retainerStart[current]!; slot < snapshot.retainerStart[current + 1]!; slot++) {
      const retainer = snapshot.retainerNode[slot]!;
      const distance = snapshot.distance[retainer]!;
      if (distance === -1) continue;
      if (best === -1 || distance < snapshot.distance[best]!) {
        best = retainer;
        bestSlot = slot;
      }
    }
    if (best <= 0) break;
    steps.push(`${snapshot.group[best]}.${snapshot.retainerLabel[bestSlot]}`);
    current = best;
  }
  return steps.join(" <- ") || "(root)";
}

const mb = (bytes: number) => (bytes / 1_048_576).toFixed(2);

/** The report on `after` (and what changed since `before` when given), as text. */
function describeSnapshots(after: Snapshot, before: Snapshot | null, top: number): string {
  const out: string[] = [];
  const afterTotals = groupTotals(after);
  const beforeTotals = before ? groupTotals(before) : new Map<string, { count: number; bytes: number }>();
  const total = (totals: Map<string, { bytes: number }>) => [...totals.values()].reduce((s, t) => s + t.bytes, 0);
  out.push(`${after.file}: ${after.nodeCount} objects, ${mb(total(afterTotals))} MB (self sizes)`);
  if (before) out.push(`${before.file}: ${before.nodeCount} objects, ${mb(total(beforeTotals))} MB`);
  const keys = [...new Set([...afterTotals.keys(), ...beforeTotals.keys()])];
  const delta = (key: string) => (afterTotals.get(key)?.bytes ?? 0) - (beforeTotals.get(key)?.bytes ?? 0);
  const rows = keys.sort((a, b) => delta(b) - delta(a)).slice(0, top);
  out.push("");
  out.push(before ? `groups that grew most (top ${top})` : `largest groups (top ${top})`);
  out.push(
    renderTable(
      before ? ["group", "count before", "count after", "MB before", "MB after", "MB grown"] : ["group", "count", "MB"],
      rows.map((key) => {
        const a = afterTotals.get(key) ?? { count: 0, bytes: 0 };
        const b = beforeTotals.get(key) ?? { count: 0, bytes: 0 };
        return before
          ? [key, String(b.count), String(a.count), mb(b.bytes), mb(a.bytes), mb(a.bytes - b.bytes)]
          : [key, String(a.count), mb(a.bytes)];
      }),
    ),
  );
  // What holds the groups that grew: the commonest paths of their objects in `after`, by bytes.
  out.push("");
  out.push(`what holds the ${Math.min(8, rows.length)} ${before ? "groups that grew most" : "largest groups"}`);
  const wanted = new Set(rows.slice(0, 8));
  const paths = new Map<string, Map<string, { count: number; bytes: number }>>();
  for (let node = 0; node < after.nodeCount; node++) {
    const key = after.group[node]!;
    if (!wanted.has(key)) continue;
    const byPath = paths.get(key) ?? new Map<string, { count: number; bytes: number }>();
    const path = holdingPath(after, node);
    const entry = byPath.get(path) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += after.selfSize[node]!;
    byPath.set(path, entry);
    paths.set(key, byPath);
  }
  for (const key of rows.slice(0, 8)) {
    out.push(`  ${key}`);
    const sorted = [...(paths.get(key) ?? new Map()).entries()].sort((a, b) => b[1].bytes - a[1].bytes);
    for (const [path, entry] of sorted.slice(0, PATHS_PER_GROUP))
      out.push(`    ${mb(entry.bytes)} MB, ${entry.count} objects: ${path}`);
  }
  // The largest single objects: a cache or a per-request map shows here as one big table.
  const largest = Array.from({ length: after.nodeCount }, (_, node) => node)
    .sort((a, b) => after.selfSize[b]! - after.selfSize[a]!)
    .slice(0, top);
  out.push("");
  out.push(`largest single objects (top ${top})`);
  out.push(
    renderTable(
      ["group", "MB", "held by"],
      largest.map((node) => [after.group[node]!, mb(after.selfSize[node]!), holdingPath(after, node)]),
    ),
  );
  return out.join("\n");
}

const HELP = `usage: node --import tsx bench/heap-snapshots.ts AFTER.heapsnapshot [BEFORE.heapsnapshot] [--top N]

What a V8 heap snapshot holds by constructor (count, self size), what grew since BEFORE, and the retainer paths that
hold the groups that grew and the largest objects. Exit codes: 0 done; 1 a file cannot be read; 2 bad arguments.`;

function main(): number {
  exitWithHelpIfAsked(HELP);
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: { top: { type: "string" } },
  });
  const top = Number(values.top ?? DEFAULT_TOP);
  if (positionals.length < 1 || positionals.length > 2 || !Number.isInteger(top) || top < 1) {
    say(HELP);
    return 2;
  }
  try {
    for (const file of positionals) say(`reading ${file} (${mb(statSync(file).size)} MB)`);
    const after = readSnapshot(positionals[0]!);
    const before = positionals[1] ? readSnapshot(positionals[1]) : null;
    process.stdout.write(`${describeSnapshots(after, before, top)}\n`);
    return 0;
  } catch (error) {
    say(`heap-snapshots: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

process.exitCode = main();
