"use client";
/**
 * The admin page's two charts, drawn with Chart.js (a canvas library: no eval, no injected stylesheet, so it runs
 * under the pages' nonce-based Content-Security-Policy; docs/decisions/027-admin-charts.md):
 *
 * - top-ups per hour over the last 24 hours, stacked by state;
 * - time from claim to final state per hour, median and 95th percentile, in seconds.
 *
 * A canvas says nothing to a screen reader: each chart has a one-line summary as its accessible name, and the same
 * numbers as a table under "Show the numbers".
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import { useEffect, useRef } from "react";
import type { TopupHourlyStats } from "@/lib/admin/get-topup-hourly-stats";
import { PAGE_LOCALE } from "@/lib/money";
import { STATUS_WORDS } from "@/lib/web/status-words";

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Legend,
  Tooltip,
);

/** The badge colours of globals.css, so a state has one colour on the whole page. */
const STATUS_COLOURS = {
  succeeded: "#0f7b3f",
  failed: "#b42318",
  processing: "#a15c00",
  initiated: "#6b7280",
} as const;
const STATUSES = ["succeeded", "failed", "processing", "initiated"] as const;

/**
 * "14:00": hours in UTC, the operators' clock (and the same text on the server and in the browser, so the numbers
 * table hydrates without a mismatch).
 */
function hourLabel(iso: string): string {
  return new Date(iso).toLocaleTimeString(PAGE_LOCALE, {
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    timeZone: "UTC",
  });
}

function seconds(value: number | null): string {
  return value === null ? "—" : `${value.toFixed(value < 10 ? 2 : 1)} s`;
}

/** Draws `config` on the canvas for as long as the component is mounted. */
function useChart(build: (canvas: HTMLCanvasElement) => Chart) {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const buildRef = useRef(build);
  buildRef.current = build;
  useEffect(() => {
    if (!canvasRef.current) return;
    const chart = buildRef.current(canvasRef.current);
    return () => chart.destroy();
  }, []);
  return canvasRef;
}

export function TopupCharts({ stats }: { stats: TopupHourlyStats }) {
  const labels = stats.byStatus.map((bucket) => hourLabel(bucket.hour));
  const totals = Object.fromEntries(
    STATUSES.map((status) => [status, stats.byStatus.reduce((sum, bucket) => sum + bucket.counts[status], 0)]),
  ) as Record<(typeof STATUSES)[number], number>;
  const finished = stats.claimToFinal.reduce((sum, bucket) => sum + bucket.finished, 0);
  const latest = [...stats.claimToFinal].reverse().find((bucket) => bucket.finished > 0);

  const statusCanvas = useChart(
    (canvas) =>
      new Chart(canvas, {
        type: "bar",
        data: {
          labels,
          datasets: STATUSES.map((status) => ({
            label: STATUS_WORDS[status].label,
            data: stats.byStatus.map((bucket) => bucket.counts[status]),
            backgroundColor: STATUS_COLOURS[status],
          })),
        },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          animation: false,
          scales: {
            x: { stacked: true, ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 } },
            y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "top-ups" } },
          },
          plugins: { legend: { position: "bottom" } },
        },
      }),
  );
  const latencyCanvas = useChart(
    (canvas) =>
      new Chart(canvas, {
        type: "line",
        data: {
          labels,
          datasets: [
            {
              label: "Median",
              data: stats.claimToFinal.map((bucket) => bucket.medianS),
              borderColor: "#2454d6",
              backgroundColor: "#2454d6",
              spanGaps: false,
            },
            {
              label: "95th percentile",
              data: stats.claimToFinal.map((bucket) => bucket.p95S),
              borderColor: "#a15c00",
              backgroundColor: "#a15c00",
              borderDash: [6, 4],
              spanGaps: false,
            },
          ],
        },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          animation: false,
          scales: {
            x: { ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 8 } },
            y: { beginAtZero: true, title: { display: true, text: "seconds" } },
          },
          plugins: { legend: { position: "bottom" } },
        },
      }),
  );

  const statusSummary =
    `Top-ups per hour over the last 24 hours, by state: ${totals.succeeded} succeeded, ${totals.failed} failed, ` +
    `${totals.processing} processing, ${totals.initiated} initiated.`;
  const latencySummary = latest
    ? `Time from claim to final state per hour. ${finished} top-ups finished in 24 hours; in the latest hour with ` +
      `any, the median was ${seconds(latest.medianS)} and the 95th percentile ${seconds(latest.p95S)}.`
    : "Time from claim to final state per hour: no top-up finished in the last 24 hours.";

  return (
    <div className="charts">
      <figure className="card chart" data-testid="chart-status">
        <figcaption>
          <h2>Top-ups per hour</h2>
          <p className="muted">Last 24 hours (UTC), by state now</p>
        </figcaption>
        <div className="chart-box">
          <canvas ref={statusCanvas} role="img" aria-label={statusSummary} />
        </div>
        <details data-testid="numbers-status">
          <summary>Show the numbers</summary>
          {/* Five columns do not fit a phone: the table scrolls sideways inside its own box (focusable, so a
              keyboard can scroll it too), and the page stays as wide as the screen. */}
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls sideways must take the focus, or a
              keyboard cannot scroll it (WCAG 2.1.1; axe-core: scrollable-region-focusable) */}
          <section className="scroll-box" aria-label="Top-ups per hour, as numbers" tabIndex={0}>
            <table className="numbers">
              <thead>
                <tr>
                  <th scope="col">Hour (UTC)</th>
                  {STATUSES.map((status) => (
                    <th scope="col" key={status}>
                      {STATUS_WORDS[status].label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {stats.byStatus.map((bucket, index) => (
                  <tr key={bucket.hour}>
                    <th scope="row">{labels[index]}</th>
                    {STATUSES.map((status) => (
                      <td key={status}>{bucket.counts[status]}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </details>
      </figure>
      <figure className="card chart" data-testid="chart-latency">
        <figcaption>
          <h2>Claim to final state</h2>
          <p className="muted">Median and 95th percentile per hour (UTC), in seconds</p>
        </figcaption>
        <div className="chart-box">
          <canvas ref={latencyCanvas} role="img" aria-label={latencySummary} />
        </div>
        <details data-testid="numbers-latency">
          <summary>Show the numbers</summary>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls sideways must take the focus, or a
              keyboard cannot scroll it (WCAG 2.1.1; axe-core: scrollable-region-focusable) */}
          <section className="scroll-box" aria-label="Claim to final state, as numbers" tabIndex={0}>
            <table className="numbers">
              <thead>
                <tr>
                  <th scope="col">Hour (UTC)</th>
                  <th scope="col">Finished</th>
                  <th scope="col">Median</th>
                  <th scope="col">95th percentile</th>
                </tr>
              </thead>
              <tbody>
                {stats.claimToFinal.map((bucket, index) => (
                  <tr key={bucket.hour}>
                    <th scope="row">{labels[index]}</th>
                    <td>{bucket.finished}</td>
                    <td>{seconds(bucket.medianS)}</td>
                    <td>{seconds(bucket.p95S)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </details>
      </figure>
    </div>
  );
}
