/**
 * What holds the app's memory (docs/benchmarks.md, "What holds the peak"): runs the bench's HTTP phases and its two
 * 1000-request storms against an app started with `--inspect`, and after each phase reads the app's resident set
 * from /proc and V8's heap figures through the inspector (Chrome DevTools Protocol over the inspector's WebSocket);
 * a sampling heap profile runs from idle to the end and is read after a forced full collection, so what the load
 * left alive shows apart from garbage not yet collected.
 *
 * Run through bench/profile.ts: `node --experimental-websocket --import tsx bench/profile.ts --memory
 * [--seconds N] [--app-node-options="--max-old-space-size=160 --max-semi-space-size=16"] [--snapshots DIR]` (Node 20
 * needs the flag for its WebSocket client).
 *
 * The app runs with the heap bound `npm start` gives it (APP_HEAP_MB, scripts/lib/stack.ts `appHeapNodeArgs`;
 * `--app-node-options` come after it and override it); `APP_HEAP_MB=0` in the environment probes V8's defaults.
 *
 * Each reading splits the resident set: V8's heap (`total_physical_size`, the pages of its spaces that are resident,
 * code space included), memory V8 accounts as external (`external`, which includes ArrayBuffers and Buffers), and
 * the anonymous memory outside V8's heap (RssAnon minus V8's physical size: malloc arenas, Buffers, thread stacks).
 *
 * `--snapshots DIR` also writes heap snapshots of the app (`v8.writeHeapSnapshot` through the inspector) to DIR: at
 * idle, after the stored payments, while the top-up storm's requests are in flight, and after everything; read them
 * with bench/heap-snapshots.ts. Writing a snapshot takes memory outside the heap and stops the app for seconds, so a
 * run with snapshots says nothing about the peak or the storms' latency: measure those in a run without.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { processCpuMs } from "./cpu-accounting";
import { duplicateStorm } from "./duplicate-storm";
import { loadRoute, type RequestGenerator } from "./http-load";
import type { HttpUser } from "./http-users";
import { appGroupMemory } from "./process-memory";
import { renderTable } from "./report";

/** A Chrome DevTools Protocol session on the app's inspector. */
interface Inspector {
  send(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): void;
}

/** Bound on one inspector call: a heap profile of a large heap takes seconds on a loaded machine. */
const INSPECTOR_CALL_MS = 120_000;

async function openInspector(port: number): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error("the app's inspector lists no target");
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let lastId = 0;
  const pending = new Map<number, (message: Record<string, unknown>) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown> };
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? {});
    if (message.id !== undefined) pending.delete(message.id);
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = ++lastId;
        const timer = setTimeout(() => reject(new Error(`inspector: ${method} unanswered`)), INSPECTOR_CALL_MS);
        pending.set(id, (result) => {
          clearTimeout(timer);
          resolve(result);
        });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** One reading: /proc figures in MiB and V8's heap in MB. */
interface MemoryReading {
  phase: string;
  rssMiB: number;
  peakMiB: number;
  anonMiB: number;
  fileMiB: number;
  heapTotalMB: number;
  heapUsedMB: number;
  oldSpaceMB: string;
  /** V8's resident heap pages (getHeapStatistics().total_physical_size). */
  v8PhysicalMB: number;
  /** process.memoryUsage().external (ArrayBuffers and Buffers included). */
  externalMB: number;
  /** RssAnon minus V8's resident heap: malloc arenas, Buffers, thread stacks. */
  anonOutsideV8MiB: number;
  note: string;
}

function statusMiB(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
}

const HEAP_EXPRESSION = `JSON.stringify({ usage: process.memoryUsage(),
  physical: process.mainModule.require("v8").getHeapStatistics().total_physical_size,
  old: process.mainModule.require("v8").getHeapSpaceStatistics().find((space) => space.space_name === "old_space") })`;

async function read(inspector: Inspector, pid: number, phase: string, note = ""): Promise<MemoryReading> {
  const evaluated = (await inspector.send("Runtime.evaluate", { expression: HEAP_EXPRESSION, returnByValue: true }))
    .result as { value: string };
  const heap = JSON.parse(evaluated.value) as {
    usage: NodeJS.MemoryUsage;
    physical: number;
    old: { space_size: number; space_used_size: number };
  };
  const mb = (bytes: number) => Math.round(bytes / 1_048_576);
  const anonMiB = statusMiB(pid, "RssAnon");
  return {
    phase,
    rssMiB: statusMiB(pid, "VmRSS"),
    peakMiB: statusMiB(pid, "VmHWM"),
    anonMiB,
    fileMiB: statusMiB(pid, "RssFile"),
    heapTotalMB: mb(heap.usage.heapTotal),
    heapUsedMB: mb(heap.usage.heapUsed),
    oldSpaceMB: `${mb(heap.old.space_size)} / ${mb(heap.old.space_used_size)}`,
    v8PhysicalMB: mb(heap.physical),
    externalMB: mb(heap.usage.external),
    anonOutsideV8MiB: anonMiB - mb(heap.physical),
    note,
  };
}

/** Open file descriptors of `pid` (its sockets included): how many of a storm's connections it has accepted. */
function openFiles(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** How long a storm may run before its in-flight snapshot is taken anyway: 3 s, past a storm's accept phase. */
const IN_FLIGHT_WAIT_MS = 3000;

/**
 * Writes a heap snapshot of the app to `dir/<name>.heapsnapshot` (V8 collects garbage first, so it holds only live
 * objects) and returns the reading taken just before it with the snapshot's file in its note.
 */
async function snapshot(inspector: Inspector, pid: number, dir: string, name: string): Promise<MemoryReading> {
  const before = await read(inspector, pid, `snapshot: ${name}`);
  const file = join(dir, `${name}.heapsnapshot`);
  const expression = `process.mainModule.require("v8").writeHeapSnapshot(${JSON.stringify(file)})`;
  await inspector.send("Runtime.evaluate", { expression, returnByValue: true });
  return { ...before, note: `heap used before the snapshot; ${file}` };
}

/** Live bytes of a sampling heap profile, by the package of the allocating function (top 8). */
function liveByPackage(profile: unknown): Array<[string, number]> {
  interface Node {
    callFrame: { url: string };
    selfSize: number;
    children?: Node[];
  }
  const totals = new Map<string, number>();
  const walk = (node: Node) => {
    const url = node.callFrame.url;
    const name =
      /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
      (url.includes(".next/server") ? "app bundle" : url.startsWith("node:") ? "node" : "native");
    totals.set(name, (totals.get(name) ?? 0) + node.selfSize);
    for (const child of node.children ?? []) walk(child);
  };
  walk((profile as { head: Node }).head);
  return [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8);
}

/**
 * Runs the phases against the app at `appUrl` (its inspector on `inspectPort`) with `users` (each with an API
 * token; the first 1000 load, the last one storms) and returns the report as text. Throws when the app or its
 * inspector cannot be read.
 */
export async function probeMemory(options: {
  appUrl: string;
  inspectPort: number;
  users: readonly HttpUser[];
  seconds: number;
  tag: string;
  /** Write heap snapshots here (see the module's comment); none when absent. */
  snapshotDir?: string;
}): Promise<string> {
  const { appUrl, users, tag } = options;
  const server = appGroupMemory(Number(new URL(appUrl).port)).find((member) => member.name.startsWith("next-server"));
  if (!server) throw new Error("memory probe: next-server not found");
  const inspector = await openInspector(options.inspectPort);
  const readings: MemoryReading[] = [];
  try {
    readings.push(await read(inspector, server.pid, "idle after start"));
    const dir = options.snapshotDir;
    if (dir) readings.push(await snapshot(inspector, server.pid, dir, "1-idle"));
    await inspector.send("HeapProfiler.enable");
    await inspector.send("HeapProfiler.startSampling", { samplingInterval: 16_384 });
    const load = users.slice(0, -1);
    const storm = users.at(-1) as HttpUser;
    let sequence = 0;
    const rotating =
      (body: (n: number) => string): RequestGenerator =>
      () => {
        const n = sequence++;
        return { body: body(n), token: load[n % load.length]!.token };
      };
    for (const [index, user] of load.entries()) {
      const response = await fetch(`${appUrl}/api/v1/payments`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
        body: `{"orderId":"mp-${tag}-${index}","amount":1}`,
      });
      await response.arrayBuffer();
    }
    readings.push(await read(inspector, server.pid, `after ${load.length} stored payments`));
    if (dir) readings.push(await snapshot(inspector, server.pid, dir, "2-stored-payments"));
    const phases: Array<[string, string, RequestGenerator]> = [
      ["empty route", "/api/v1/bench/noop", () => ({ body: "{}", token: null })],
      ["fresh payments", "/api/v1/payments", rotating((n) => `{"orderId":"mf-${tag}-${n}","amount":1}`)],
      [
        "hot replays",
        "/api/v1/payments",
        () => {
          const n = sequence++ % load.length;
          return { body: `{"orderId":"mp-${tag}-${n}","amount":1}`, token: load[n]!.token };
        },
      ],
      ["top-ups", "/api/v1/topups", rotating((n) => `{"refId":"mt-${tag}-${n}","amount":100}`)],
    ];
    for (const [name, path, next] of phases) {
      const cpuBefore = processCpuMs(server.pid);
      const figures = await loadRoute({ appUrl, path, connections: 32, durationS: options.seconds, next });
      const cpu = (processCpuMs(server.pid) - cpuBefore) / Math.max(1, figures.total);
      const note = `${figures.requestsPerS.toFixed(0)} req/s, app ${cpu.toFixed(2)} ms CPU/request`;
      readings.push(await read(inspector, server.pid, `after ${name}`, note));
    }
    for (const [path, body] of [
      ["/api/v1/payments", `{"orderId":"md-${tag}","amount":1}`],
      ["/api/v1/topups", `{"refId":"md-${tag}","amount":100}`],
    ] as const) {
      const cpuBefore = processCpuMs(server.pid);
      const filesBefore = openFiles(server.pid);
      // With snapshots, the app stops for seconds while one is written: the storm's requests wait that long.
      const running = duplicateStorm({
        appUrl,
        path,
        token: storm.token,
        body,
        count: 1000,
        timeoutMs: dir ? 120_000 : undefined,
      });
      if (dir && path.endsWith("topups")) {
        // Taken once most of the storm's connections are open in the app, so most of its requests are in flight.
        const startedMs = performance.now();
        while (openFiles(server.pid) - filesBefore < 800 && performance.now() - startedMs < IN_FLIGHT_WAIT_MS)
          await new Promise((resolve) => setTimeout(resolve, 20));
        readings.push(await snapshot(inspector, server.pid, dir, "3-top-up-storm-in-flight"));
      }
      const figures = await running;
      const cpu = (processCpuMs(server.pid) - cpuBefore) / 1000;
      const note = `p99 ${figures.p99Ms?.toFixed(0) ?? "n/a"} ms, app ${cpu.toFixed(2)} ms CPU/request`;
      readings.push(await read(inspector, server.pid, `after the storm on ${path}`, note));
    }
    if (dir) readings.push(await snapshot(inspector, server.pid, dir, "4-after-everything"));
    await inspector.send("HeapProfiler.collectGarbage");
    readings.push(await read(inspector, server.pid, "after a forced full collection"));
    const sampled = (await inspector.send("HeapProfiler.getSamplingProfile")).profile;
    const live = liveByPackage(sampled);
    const liveTotal = live.reduce((sum, [, bytes]) => sum + bytes, 0);
    return [
      renderTable(
        [
          "phase",
          "RSS MiB",
          "peak MiB",
          "anon",
          "file",
          "heap total MB",
          "heap used MB",
          "old space MB",
          "V8 resident MB",
          "external MB",
          "anon outside V8",
          "note",
        ],
        readings.map((r) => [
          r.phase,
          String(r.rssMiB),
          String(r.peakMiB),
          String(r.anonMiB),
          String(r.fileMiB),
          String(r.heapTotalMB),
          String(r.heapUsedMB),
          r.oldSpaceMB,
          String(r.v8PhysicalMB),
          String(r.externalMB),
          String(r.anonOutsideV8MiB),
          r.note,
        ]),
      ),
      "",
      `allocated during the load and still alive after the forced collection (sampled): ${(liveTotal / 1_048_576).toFixed(1)} MB`,
      ...live.map(([name, bytes]) => `  ${name}: ${(bytes / 1_048_576).toFixed(1)} MB`),
    ].join("\n");
  } finally {
    inspector.close();
  }
}
