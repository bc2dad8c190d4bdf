// #/connections/NAME : one connection's streams (mode, cursor, state in words, freshness),
// its run history with charts of throughput and duration, and the actions on it. Polled
// every second while a run is going (or was just started), so a sync is watched live.
import { get, seg } from "./api.js";
import { backfillDialog, resetDialog, syncNow } from "./actions.js";
import { bars } from "./charts.js";
import { baseName, fact, fill, h, table } from "./dom.js";
import { badge, bytes, count, duration, freshness, rate, when } from "./format.js";
import { notify, settle } from "./notices.js";

/** Runs per answer: the newest page, then each "Older runs" page. */
const PAGE = 50;

export async function renderConnection(ctx, name) {
  document.title = `${name} · Headwater`;
  const path = `/api/connections/${seg(name)}`;
  // `older`: the runs paged in by "Older runs", newest first, each older than every run of
  // the newest page; a run that a new one pushes off that page joins them, so none drops out.
  const state = { connection: null, older: [], noMore: false, expecting: 0 };
  const head = h("div", { class: "page-head" });
  const facts = h("div");
  const streams = h("section", { "aria-labelledby": "streams-title" });
  const history = h("section", { "aria-labelledby": "runs-title" });
  fill(ctx.main,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/" }, "Connections"),
      " / ", h("span", { "aria-current": "page" }, name)),
    head, facts, streams, history);

  const refresh = async () => {
    const connection = await get(`${path}?limit=${PAGE}`);
    if (ctx.stopped) return null;
    if (state.older.length) {
      const ids = new Set((connection.runs || []).map((r) => r.run_id));
      const dropped = (state.connection?.runs || []).filter((r) => !ids.has(r.run_id));
      state.older.unshift(...dropped);
    }
    state.connection = connection;
    const running = Boolean(connection.busy)
      || (connection.runs || []).some((r) => r.status === "running");
    if (running) state.expecting = 0;
    for (const r of connection.runs || []) if (r.status !== "running") settle(r.run_id);
    if (!running && Date.now() >= state.expecting) settle(name);  // "Sync of ... started."
    draw();
    return running || Date.now() < state.expecting ? 1000 : 5000;
  };

  const actions = {
    sync: async (button) => {
      state.expecting = Date.now() + 60000;  // poll fast until the new run shows up
      if (await syncNow(name, button)) {
        await refresh();
      } else {
        state.expecting = 0;
      }
    },
    backfill: () => backfillDialog(state.connection),
    reset: (stream) => resetDialog(state.connection, stream, refresh),
    older: async (button) => {
      const runs = shown();
      if (!runs.length) return;
      button.disabled = true;
      let page;
      try {
        page = await get(`${path}?limit=${PAGE}&before=${seg(runs[runs.length - 1].run_id)}`);
      } catch (error) {
        notify(error.message, "error");
        button.disabled = false;
        return;
      }
      if (ctx.stopped) return;
      state.older.push(...page.runs);
      state.noMore = page.runs.length < PAGE;  // a short page is the oldest one
      draw();
    },
  };

  /** The newest page, then the older pages, each run once. */
  function shown() {
    const latest = state.connection.runs || [];
    const ids = new Set(latest.map((r) => r.run_id));
    return [...latest, ...state.older.filter((r) => !ids.has(r.run_id))];
  }

  function draw() {
    const c = state.connection;
    const runs = shown();
    fill(head, drawHead(c, actions));
    fill(facts, drawFacts(c));
    fill(streams, drawStreams(c, actions));
    fill(history, c.valid || runs.length ? drawHistory(runs, actions, state.noMore) : null);
  }

  await ctx.poll(refresh, (wait) => wait);
}

function drawHead(c, actions) {
  const running = Boolean(c.busy) || (c.runs || []).some((r) => r.status === "running");
  return [
    h("div", {}, h("h1", { "data-testid": "connection-name" }, c.name), " ",
      c.valid ? badge(c.last_run?.status, "connection-status")
        : h("span", { class: "badge badge-invalid", "data-testid": "connection-status" },
          "invalid")),
    c.valid ? h("div", { class: "actions" },
      h("button", { type: "button", class: "primary", "data-testid": "sync-now",
        disabled: running, title: running ? `A ${c.busy ?? "run"} of this connection is going` : null,
        onclick: (e) => actions.sync(e.currentTarget) }, "Sync now"),
      h("button", { type: "button", "data-testid": "backfill-open",
        onclick: actions.backfill }, "Backfill…")) : null,
  ];
}

function drawFacts(c) {
  return [
    c.valid ? null : h("div", { class: "panel panel-error" },
      h("h2", {}, "This file does not validate"),
      h("ul", { class: "problems", "data-testid": "problems" },
        (c.problems || []).map((p) => h("li", {}, p)))),
    h("dl", { class: "facts" },
      fact("Source → destination",
        `${c.source_type ?? "unknown"} → ${c.destination_type ?? "unknown"}`),
      fact("File", h("code", { title: c.file }, baseName(c.file))),
      fact("Schedule", c.schedule ? h("code", {}, c.schedule) : "manual only"),
      fact("Next firing", c.next_firing ? when(c.next_firing) : "—"),
      fact("Last run", c.last_run
        ? h("a", { href: `#/runs/${seg(c.last_run.run_id)}` }, when(c.last_run.started_at))
        : "never")),
  ];
}

function drawStreams(c, actions) {
  if (!c.streams) return null;
  return [
    h("h2", { id: "streams-title" }, "Streams"),
    table("streams-table", [
      { label: "Stream", key: "name", cell: (s) => h("strong", {}, s.name) },
      { label: "Sync mode", key: "sync_mode", cell: (s) => h("span", { class: "wrap" },
        (s.sync_mode ?? "—").replace("+", " + ")) },
      { label: "Cursor", key: "cursor", cell: (s) => s.cursor_field
        ? h("code", {}, [].concat(s.cursor_field).join(".")) : "—" },
      { label: "Primary key", key: "pk", cell: (s) => s.primary_key?.length
        ? h("code", {}, s.primary_key.map((k) => [].concat(k).join(".")).join(", ")) : "—" },
      { label: "State", key: "state", cell: (s) => h("div", { class: "state-cell" },
        h("span", { "data-testid": "stream-state" },
          s.state_text || (s.state ? "stored" : "none: the next sync reads from the start")),
        h("button", { type: "button", class: "small", "data-testid": "reset-open",
          "aria-label": `Reset state of ${s.name}`, onclick: () => actions.reset(s.name) },
        "Reset…")) },
      { label: "Freshness", key: "freshness", num: true, cell: (s) => h("span", {
        title: s.newest_cursor ? `newest committed cursor: ${s.newest_cursor}` : null,
      }, freshness(s.freshness_s)) },
      { label: "Table", key: "table", cell: (s) => h("code", { class: "path", title: s.table }, s.table ?? "—") },
    ], c.streams, { empty: "This connection has no streams." }),
  ];
}

function drawHistory(runs, actions, noMore) {
  const oldestFirst = runs.slice(0, PAGE).reverse();
  const tip = (r, words) => `${r.run_id} (${r.status}): ${words}`;
  return [
    h("h2", { id: "runs-title" }, "Runs"),
    runs.length ? h("div", { class: "charts" },
      h("figure", {}, bars("throughput-chart", oldestFirst.map((r) => ({
        value: r.rows_per_s, status: r.status, tip: tip(r, `${rate(r.rows_per_s)} rows/s`),
      })), { label: "Throughput (rows/s)", format: rate, width: 320, height: 60 }),
      h("figcaption", {}, "Throughput, rows/s per run")),
      h("figure", {}, bars("duration-chart", oldestFirst.map((r) => ({
        value: r.duration_s, status: r.status, tip: tip(r, duration(r.duration_s)),
      })), { label: "Duration per run", format: duration, width: 320, height: 60 }),
      h("figcaption", {}, "Duration per run"))) : null,
    table("runs-table", [
      { label: "Run", key: "run_id", cell: (r) => h("a", { href: `#/runs/${seg(r.run_id)}`,
        "data-testid": "run-link" }, r.run_id) },
      { label: "Status", key: "status", cell: (r) => badge(r.status, "run-status") },
      { label: "Started", key: "started", cell: (r) => when(r.started_at) },
      { label: "Records", key: "records", num: true, cell: (r) => count(r.records) },
      { label: "File bytes", key: "bytes", num: true,
        title: "Size of the files the run's commits added to its tables",
        cell: (r) => bytes(r.bytes) },
      { label: "Duration", key: "duration", num: true, cell: (r) => duration(r.duration_s) },
      { label: "Rejected", key: "rejected", num: true, cell: (r) => count(r.rejected) },
      { label: "Rows/s", key: "rows_per_s", num: true, cell: (r) => rate(r.rows_per_s) },
      { label: "Kind", key: "kind", cell: (r) => r.kind ?? "sync" },
    ], runs, { empty: "No runs yet: press “Sync now” to start the first." }),
    runs.length >= PAGE && !noMore ? h("button", { type: "button", "data-testid": "older-runs",
      onclick: (e) => actions.older(e.currentTarget) }, "Older runs") : null,
  ];
}
