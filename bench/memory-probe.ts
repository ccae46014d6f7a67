/**
 * What holds the app's memory (docs/benchmarks.md, "What holds the peak"): runs the bench's HTTP phases and its two
 * 1000-request storms against an app started with `--inspect`, and after each phase reads the app's resident set
 * from /proc and V8's heap figures through the inspector (Chrome DevTools Protocol over the inspector's WebSocket);
 * a sampling heap profile runs from idle to the end and is read after a forced full collection, so what the load
 * left alive shows apart from garbage not yet collected.
 *
 * Run through bench/profile.ts: `node --experimental-websocket --import tsx bench/profile.ts --memory
 * [--seconds N] [--app-node-options="--max-old-space-size=160 --max-semi-space-size=16"]` (Node 20 needs the flag
 * for its WebSocket client).
 */
import { readFileSync } from "node:fs";
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
  note: string;
}

function statusMiB(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
}

const HEAP_EXPRESSION = `JSON.stringify({ usage: process.memoryUsage(), old: process.mainModule.require("v8")
  .getHeapSpaceStatistics().find((space) => space.space_name === "old_space") })`;

async function read(inspector: Inspector, pid: number, phase: string, note = ""): Promise<MemoryReading> {
  const evaluated = (await inspector.send("Runtime.evaluate", { expression: HEAP_EXPRESSION, returnByValue: true }))
    .result as { value: string };
  const heap = JSON.parse(evaluated.value) as {
    usage: NodeJS.MemoryUsage;
    old: { space_size: number; space_used_size: number };
  };
  const mb = (bytes: number) => Math.round(bytes / 1_048_576);
  return {
    phase,
    rssMiB: statusMiB(pid, "VmRSS"),
    peakMiB: statusMiB(pid, "VmHWM"),
    anonMiB: statusMiB(pid, "RssAnon"),
    fileMiB: statusMiB(pid, "RssFile"),
    heapTotalMB: mb(heap.usage.heapTotal),
    heapUsedMB: mb(heap.usage.heapUsed),
    oldSpaceMB: `${mb(heap.old.space_size)} / ${mb(heap.old.space_used_size)}`,
    note,
  };
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
}): Promise<string> {
  const { appUrl, users, tag } = options;
  const server = appGroupMemory(Number(new URL(appUrl).port)).find((member) => member.name.startsWith("next-server"));
  if (!server) throw new Error("memory probe: next-server not found");
  const inspector = await openInspector(options.inspectPort);
  const readings: MemoryReading[] = [];
  try {
    readings.push(await read(inspector, server.pid, "idle after start"));
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
      const figures = await duplicateStorm({ appUrl, path, token: storm.token, body, count: 1000 });
      const cpu = (processCpuMs(server.pid) - cpuBefore) / 1000;
      const note = `p99 ${figures.p99Ms?.toFixed(0) ?? "n/a"} ms, app ${cpu.toFixed(2)} ms CPU/request`;
      readings.push(await read(inspector, server.pid, `after the storm on ${path}`, note));
    }
    await inspector.send("HeapProfiler.collectGarbage");
    readings.push(await read(inspector, server.pid, "after a forced full collection"));
    const sampled = (await inspector.send("HeapProfiler.getSamplingProfile")).profile;
    const live = liveByPackage(sampled);
    const liveTotal = live.reduce((sum, [, bytes]) => sum + bytes, 0);
    return [
      renderTable(
        ["phase", "RSS MiB", "peak MiB", "anon", "file", "heap total MB", "heap used MB", "old space MB", "note"],
        readings.map((r) => [
          r.phase,
          String(r.rssMiB),
          String(r.peakMiB),
          String(r.anonMiB),
          String(r.fileMiB),
          String(r.heapTotalMB),
          String(r.heapUsedMB),
          r.oldSpaceMB,
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
