// #/ : every connection file in the folder, valid or not, with its last run and a chart of
// records per run; refreshed every few seconds so a run started elsewhere shows up.
import { get } from "./api.js";
import { bars } from "./charts.js";
import { baseName, fill, h, table } from "./dom.js";
import { badge, bytes, count, duration, rate, when } from "./format.js";

export async function renderConnections(ctx) {
  document.title = "Connections · Headwater";
  const summary = h("p", { class: "muted", "data-testid": "connections-summary" }, "Loading…");
  const list = h("div", { "data-testid": "connections" });
  const invalid = h("section", { "aria-labelledby": "invalid-title" });
  let good = [];
  const redraw = () => fill(list, connectionsTable(good, chosen()));
  const { bar, chosen } = filterBar(redraw);
  fill(ctx.main, h("div", { class: "page-head" }, h("h1", {}, "Connections"), summary),
    bar, list, invalid);
  let shownInvalid = null;  // redrawn only when it changes, so an opened entry stays open
  await ctx.poll(async () => {
    const { connections } = await get("/api/connections");
    if (ctx.stopped) return null;
    good = connections.filter((c) => c.valid);
    const bad = connections.filter((c) => !c.valid);
    const running = good.filter((c) => c.last_run?.status === "running").length;
    summary.textContent = `${good.length} connection${good.length === 1 ? "" : "s"}`
      + (running ? `, ${running} running` : "")
      + (bad.length ? `, ${bad.length} file${bad.length === 1 ? "" : "s"} with problems` : "");
    redraw();
    const seen = JSON.stringify(bad);
    if (seen !== shownInvalid) fill(invalid, bad.length ? [
      h("h2", { id: "invalid-title" }, "Files that do not validate"),
      h("ul", { class: "invalid-list" }, bad.map(invalidEntry)),
    ] : null);
    shownInvalid = seen;
    return running ? 2000 : 5000;
  }, (wait) => wait);
}

const FILE_BYTES = "Size of the files the last run's commits added to its tables";

/** Which connections a person asked to see: by their last run's outcome, or late/stale. */
const STATUSES = {
  all: ["Any status", () => true],
  late: ["Late or stale", (c) => Boolean(c.late) || (c.stale || []).length > 0],
  failed: ["Last run failed", (c) => c.last_run?.status === "failed"],
  running: ["Running", (c) => c.last_run?.status === "running"],
  succeeded: ["Last run succeeded", (c) => ["succeeded", "warned"].includes(c.last_run?.status)],
  never: ["Never run", (c) => !c.last_run],
};
/** Ordered by their last run's start, newest (1) or oldest (-1) first; never run: last. */
const byLastRun = (newest) => (a, b) => {
  const [x, y] = [a, b].map((c) => (c.last_run ? Date.parse(c.last_run.started_at) : null));
  if (x === y) return a.name.localeCompare(b.name);
  if (x === null || y === null) return x === null ? 1 : -1;
  return newest * (y - x);
};
const SORTS = {
  name: ["Name", (a, b) => a.name.localeCompare(b.name)],
  recent: ["Last run, newest first", byLastRun(1)],
  oldest: ["Last run, oldest first", byLastRun(-1)],
};

/** The search box and the two choices above the list; kept in the address's query
 * (`#/?q=shop&status=late&sort=recent`), so a filtered list can be linked to and survives a
 * reload, and the list redrawn at once on each keystroke, not at the next poll. */
function filterBar(redraw) {
  const asked = new URLSearchParams(location.hash.split("?")[1] || "");
  const options = (choices, current) => Object.entries(choices).map(([key, [label]]) =>
    h("option", { value: key, selected: key === current }, label));
  const status = asked.get("status") in STATUSES ? asked.get("status") : "all";
  const order = asked.get("sort") in SORTS ? asked.get("sort") : "name";
  const changed = () => {
    const query = new URLSearchParams();
    if (search.value) query.set("q", search.value);
    if (statusBox.value !== "all") query.set("status", statusBox.value);
    if (sortBox.value !== "name") query.set("sort", sortBox.value);
    const text = query.toString();
    history.replaceState(null, "", `#/${text ? `?${text}` : ""}`);
    redraw();
  };
  const search = h("input", { type: "search", placeholder: "Search by name",
    "aria-label": "Search connections by name", "data-testid": "connections-search",
    value: asked.get("q") || "", oninput: changed });
  const statusBox = h("select", { "aria-label": "Show connections by status",
    "data-testid": "connections-status", onchange: changed }, options(STATUSES, status));
  const sortBox = h("select", { "aria-label": "Sort connections",
    "data-testid": "connections-sort", onchange: changed }, options(SORTS, order));
  const bar = h("div", { class: "filter-bar", role: "search" }, search, statusBox, sortBox);
  const chosen = () => ({ text: search.value.trim().toLowerCase(), status: statusBox.value,
    sort: sortBox.value });
  return { bar, chosen };
}

function connectionsTable(all, { text, status, sort }) {
  const connections = all
    .filter((c) => !text || c.name.toLowerCase().includes(text))
    .filter(STATUSES[status][1])
    .sort(SORTS[sort][1]);
  const empty = all.length ? "No connection matches the search and the filter."
    : "No connection files in this folder yet.";
  return [
    all.length && connections.length !== all.length ? h("p", { class: "muted",
      "data-testid": "connections-shown" }, `${connections.length} of ${all.length} shown`) : null,
    table("connections-table", [
      { label: "Connection", key: "name", cell: (c) => h("a", {
        href: `#/connections/${encodeURIComponent(c.name)}`, "data-testid": "connection-link",
      }, c.name) },
      { label: "Last run", key: "last_run", cell: (c) => h("span", {},
        badge(c.last_run?.status, "last-run-status"),
        c.last_run ? h("span", { class: "sub" }, when(c.last_run.started_at)) : null,
        health(c)) },
      { label: "Records", key: "records", num: true, cell: (c) => count(c.last_run?.records) },
      { label: "File bytes", key: "bytes", num: true, title: FILE_BYTES,
        cell: (c) => bytes(c.last_run?.bytes) },
      { label: "Rows/s", key: "rows_per_s", num: true, cell: (c) => rate(c.last_run?.rows_per_s) },
      { label: "Duration", key: "duration", num: true,
        cell: (c) => duration(c.last_run?.duration_s) },
      { label: "Records per run", key: "chart", cell: (c) => bars("records-chart",
        (c.recent_runs || []).map((r) => ({
          value: r.records, status: r.status,
          tip: `${r.run_id}: ${count(r.records)} records, ${r.status}`,
        })), { label: "Records per run", format: count }) },
      { label: "Source → destination", key: "types",
        cell: (c) => `${c.source_type ?? "?"} → ${c.destination_type ?? "?"}` },
      { label: "Schedule", key: "schedule", cell: (c) => c.schedule
        ? h("span", {}, h("code", {}, c.schedule), c.next_firing
          ? h("span", { class: "sub" }, "next ", when(c.next_firing)) : null)
        : h("span", { class: "muted" }, "manual") },
    ], connections, { empty })];
}

/** Late, stale, or a store that did not answer: said beside the last run, with the age, so a
 * green "succeeded" of long ago never reads as all well. */
function health(c) {
  const said = [];
  if (c.store_missing) {
    said.push(h("span", { class: "sub muted", "data-testid": "store-missing" },
      "no metadata store yet: no sync of it has run"));
  }
  if (c.store_error) {
    said.push(h("span", { class: "badge badge-failed", title: c.store_error,
      "data-testid": "store-error" }, "store unreadable"));
  }
  if (c.late) {
    said.push(h("span", { class: "sub", "data-testid": "late" },
      h("span", { class: "badge badge-late" }, `late ${duration(c.late.age_s)}`),
      " due ", when(c.late.since), ", no run since"));
  }
  for (const s of c.stale || []) {
    said.push(h("span", { class: "sub", "data-testid": "stale" },
      h("span", { class: "badge badge-stale" }, "stale"),
      ` ${s.stream}: data ${duration(s.freshness_s)} old (over ${duration(s.threshold_s)})`));
  }
  return said.length ? said : null;
}

function invalidEntry(c) {
  return h("li", { "data-testid": "invalid-connection" },
    h("details", {},
      h("summary", {}, h("span", { class: "badge badge-invalid" }, "invalid"), " ",
        h("strong", {}, c.name), " ", h("span", { class: "muted", title: c.file }, baseName(c.file)),
        ` — ${c.problems.length} problem${c.problems.length === 1 ? "" : "s"}`),
      h("ul", { class: "problems", "data-testid": "problems" },
        c.problems.map((p) => h("li", {}, p))),
      h("a", { href: `#/connections/${encodeURIComponent(c.name)}`,
        "data-testid": "invalid-connection-link" }, `Open ${c.name}`)));
}
