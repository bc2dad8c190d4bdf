// Small inline SVG charts drawn here (no chart library, nothing fetched): one bar per
// run, oldest on the left, the bar's tooltip gives the run's figure in words; the value
// axis is labelled (its top and zero) and the latest and highest values are said in text
// under the bars, so a chart is read without hovering.
import { h } from "./dom.js";

/**
 * bars("records", points, {label: "Records per run", format: count})
 * points: [{value, status, tip}] oldest first; a null value draws a stub, a failed run's
 * bar is drawn in the failure colour and says "failed" in its tooltip.
 */
export function bars(testid, points, { label, format, width = 160, height = 36 } = {}) {
  const known = points.map((p) => p.value ?? 0);
  const top = Math.max(0, ...known) || 1;
  const n = Math.max(points.length, 1);
  const gap = n > 40 ? 0.5 : 1.5;
  // A few runs stay thin bars on the left, not blocks across the chart.
  const barWidth = Math.max(1, Math.min((width - gap * (n - 1)) / n, width / 16));
  const summary = points.length
    ? `${label}: ${points.length} runs, highest ${format(top)}`
    : `${label}: no runs yet`;
  const latest = points.length ? points[points.length - 1].value : null;
  const svg = h("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
    "aria-label": summary, "data-testid": testid, "data-points": points.length,
    preserveAspectRatio: "none",
  },
  h("title", {}, summary),
  h("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "axis" }),
  points.map((p, i) => {
    const barHeight = p.value ? Math.max(1.5, (p.value / top) * (height - 2)) : 1;
    return h("rect", {
      x: (i * (barWidth + gap)).toFixed(2), y: (height - barHeight).toFixed(2),
      width: barWidth.toFixed(2), height: barHeight.toFixed(2),
      class: `bar bar-${String(p.status || "none").replace(/[^a-z_-]/gi, "")}`,
    }, h("title", {}, p.tip));
  }));
  return h("div", { class: "chart-box" },
    h("div", { class: "chart-axis", "aria-hidden": "true", "data-testid": `${testid}-axis` },
      h("span", {}, points.length ? format(top) : ""), h("span", {}, "0")),
    svg,
    h("div", { class: "chart-values", "data-testid": `${testid}-values` }, points.length
      ? `latest ${format(latest)} · highest ${format(top)} · oldest left` : "no runs yet"));
}
