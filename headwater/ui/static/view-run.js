// #/runs/RUN_ID : one run's figures per stream and per partition, its checkpoints with
// their commit identifiers, state before and after, the persisted plan, errors with the
// partition that failed, and its log lines. While the run is `running` the page asks
// again every second (the server answers from what is committed so far, and what the
// tasks have read so far in the checkpoints not committed yet: "reading"), so records,
// partitions done/planned and rows/s move without a reload; it stops once the run ends.
import { download, get, seg } from "./api.js";
import { replayRun, stopRun } from "./actions.js";
import { fact, fill, h, table } from "./dom.js";
import { badge, bytes, count, duration, milliseconds, rate, when } from "./format.js";
import { notify, settle } from "./notices.js";

const MAX_PARTITION_ROWS = 500;
// What the engine records (headwater/engine/_partition_stats.py, the destinations' commit
// figures): a run's, stream's and checkpoint's bytes are the files its commits added to the
// table; a partition's are the in-memory (Arrow) size of the rows its task handed to Spark,
// before encoding and compression, so larger; its time is the source's own.
const FILE_BYTES = "Size of the files the commits added to the table (encoded and "
  + "compressed, as stored)";
const MEMORY_BYTES = "In-memory (Arrow) size of the rows the source handed to Spark, before "
  + "they were encoded and compressed: larger than the files the checkpoint wrote";
const SOURCE_TIME = "Time the source spent producing this partition's rows, counted on the "
  + "executor to the millisecond (Spark's own work and the commit are not counted)";
const CHECKPOINT_TIME = "The checkpoint's Spark job (reading and writing its partitions) "
  + "and its commit";
const LOG_PAGE = 500;

export async function renderRun(ctx, runId) {
  document.title = `Run ${runId} · Headwater`;
  const path = `/api/runs/${seg(runId)}`;
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" });
  const head = h("div", { class: "page-head" });
  const body = h("div");
  const logList = h("ol", { class: "logs", "data-testid": "log-lines" });
  const logs = h("section", { "aria-labelledby": "logs-title" },
    h("h2", { id: "logs-title" }, "Log lines"),
    h("p", {}, h("a", { href: `${path}/logs.txt`, "data-testid": "log-download",
      onclick: (event) => {
        event.preventDefault();
        download(`${path}/logs.txt`).catch((error) => notify(error.message, "error"));
      } }, "Download the log lines (text)")),
    h("div", { class: "log-wrap" }, logList));
  fill(ctx.main, crumbs, head, body, logs);
  let lastSeq = null;
  let logCount = 0;

  // Log lines come a page at a time (after the last seq seen); a run keeps its first and
  // last lines, and the gap between them is said where it is.
  const readLogs = async () => {
    for (;;) {
      const after = lastSeq === null ? 0 : lastSeq;
      const { lines } = await get(`${path}/logs?after=${after}&limit=${LOG_PAGE}`);
      if (ctx.stopped) return;
      for (const line of lines) {
        const gap = line.seq - (lastSeq ?? 0) - 1;
        if (gap > 0) {
          logList.append(h("li", { class: "log-gap" },
            `… ${count(gap)} line${gap === 1 ? "" : "s"} not kept …`));
        }
        logList.append(h("li", { class: `log log-${String(line.level).toLowerCase()}`,
          "data-testid": "log-line" },
        h("time", { datetime: line.at, title: line.at }, line.at?.slice(11, 23) ?? ""), " ",
        h("span", { class: "level" }, line.level), " ",
        h("span", { class: "logger" }, line.logger), " ",
        h("span", { class: "message" }, line.message)));
        lastSeq = line.seq;
        logCount += 1;
      }
      logList.dataset.count = logCount;
      if (lines.length < LOG_PAGE) return;
    }
  };

  await ctx.poll(async () => {
    const run = await get(path);
    if (ctx.stopped) return null;
    if (run.status !== "running") settle(run.run_id);  // "Stopping: ..." has said its part
    const open = new Set([...body.querySelectorAll("details[open][data-key]")]
      .map((d) => d.dataset.key));
    fill(crumbs, h("a", { href: "#/" }, "Connections"), " / ",
      h("a", { href: `#/connections/${seg(run.connection)}` }, run.connection), " / ",
      h("span", { "aria-current": "page" }, run.run_id));
    fill(head, drawHead(run));
    fill(body, drawBody(run));
    for (const d of body.querySelectorAll("details[data-key]")) {
      if (open.has(d.dataset.key)) d.open = true;
    }
    await readLogs();
    return run.status === "running" ? 1000 : null;
  }, (wait) => wait);
}

function drawHead(run) {
  const running = run.status === "running";
  return [
    h("div", {}, h("h1", {}, "Run ", h("span", { "data-testid": "run-id" }, run.run_id)), " ",
      badge(run.status, "run-status"), " ",
      h("span", { class: "muted", "data-testid": "run-kind" }, run.kind ?? "sync"),
      run.replay_of ? h("span", { class: "muted", "data-testid": "replay-of" }, "of ",
        h("a", { href: `#/runs/${seg(run.replay_of)}` }, run.replay_of)) : null),
    h("div", { class: "actions" },
      running ? h("button", { type: "button", class: "danger", "data-testid": "stop",
        onclick: (e) => stopRun(run.run_id, e.currentTarget) }, "Stop") : null,
      running || run.status === "stopped" ? null : h("button", { type: "button",
        "data-testid": "replay",
        title: "Re-read this run's partitions and replace its rows",
        onclick: (e) => replayRun(run, e.currentTarget) }, "Replay")),
  ];
}

function drawBody(run) {
  const p = run.progress || {};
  const planned = p.partitions_planned;
  return [
    h("section", { class: "panel", "data-testid": "progress", "data-live": p.live ? "yes" : "no",
      "aria-live": "polite" },
    h("div", { class: "figures" },
      figure("Records", count(p.records ?? run.records), "progress-records"),
      p.live ? figure("Being read", count(p.records_reading ?? 0), "progress-reading",
        READING) : null,
      figure("Partitions", `${count(p.partitions_done)} / ${count(planned)}`,
        "progress-partitions"),
      figure("Rows/s", rate(p.rows_per_s ?? run.rows_per_s), "progress-rate"),
      figure("Duration", duration(run.duration_s), "run-duration")),
    planned ? h("progress", { max: planned, value: p.partitions_done ?? 0,
      "aria-label": "Partitions done" }) : null),
    h("dl", { class: "facts" },
      fact("Started", when(run.started_at)),
      fact("Ended", run.ended_at ? when(run.ended_at) : (run.status === "running" ? "running" : "—")),
      fact("File bytes", h("span", { title: FILE_BYTES }, bytes(run.bytes))),
      fact("Rejected", count(run.rejected)),
      fact("Attempts", count((run.attempts || []).length || null))),
    run.status === "stopped" ? h("div", { class: "panel panel-stopped", role: "status",
      "data-testid": "run-stopped" },
    h("h2", {}, "Stopped"),
    h("p", {}, "This run ended after its commits in flight, on request or because a commit's "
      + "outcome could not be checked (the reason is below); it is not finished. "
      + "The next sync of ", h("a", { href: `#/connections/${seg(run.connection)}` },
      run.connection), " (Sync now, its schedule or headwater sync) resumes it where it "
      + "stopped; until then a replay or backfill of the connection is refused."),
    run.error ? h("pre", { "data-testid": "stop-reason" }, run.error) : null)
      : run.status === "warned" ? h("div", { class: "panel panel-warned", role: "status",
        "data-testid": "run-warned" },
      h("h2", {}, "Warned"),
      h("p", {}, "This run committed every checkpoint and finished, but a stream's result "
        + "looks wrong: every record it read was rejected (the reasons are in the table's "
        + "_hw_notes), or its table has columns the stream's schema no longer has. "
        + "on_warning: fail in the connection file makes such a run fail."),
      h("pre", { "data-testid": "run-warnings" }, run.error))
      : run.error ? h("div", { class: "panel panel-error", role: "alert" },
        h("h2", {}, "Error"), h("pre", { "data-testid": "run-error" }, run.error)) : null,
    (run.errors || []).length ? h("section", {}, h("h2", {}, "Errors by stream and partition"),
      table("errors-table", [
        { label: "Stream", key: "stream", cell: (e) => e.stream ?? "—" },
        { label: "Checkpoint", key: "checkpoint", num: true,
          cell: (e) => count(e.checkpoint_index) },
        { label: "Partition", key: "partition", cell: (e) => h("code", {}, e.partition_id ?? "—") },
        { label: "Message", key: "message", cell: (e) => h("span", { class: "wrap" }, e.message) },
      ], run.errors)) : null,
    h("h2", {}, "Streams"),
    table("run-streams-table", [
      { label: "Stream", key: "name", cell: (s) => h("strong", {}, s.name) },
      { label: "Status", key: "status", cell: (s) => badge(s.status, "stream-status") },
      { label: "Records", key: "records", num: true, cell: (s) => count(s.records) },
      { label: "Rejected", key: "rejected", num: true, cell: (s) => count(s.rejected) },
      { label: "File bytes", key: "bytes", num: true, title: FILE_BYTES,
        cell: (s) => bytes(s.bytes) },
      { label: "Partitions", key: "partitions", num: true,
        cell: (s) => `${count(s.partitions_done)} / ${count(s.partitions_planned)}` },
    ], run.streams || [], { empty: "No stream figures recorded yet." }),
    (run.streams || []).map((s) => drawStreamDetail(s, run.status)),
    h("h2", {}, "State"),
    h("div", { class: "two" },
      h("figure", {}, h("figcaption", {}, "Before"),
        h("pre", { class: "json", "data-testid": "state-before" }, json(run.state_before))),
      h("figure", {}, h("figcaption", {}, "After"),
        h("pre", { class: "json", "data-testid": "state-after" }, json(run.state_after)))),
    (run.attempts || []).length > 1 ? [h("h2", {}, "Attempts"), table("attempts-table", [
      { label: "#", key: "number", num: true, cell: (a) => count(a.number) },
      { label: "Status", key: "status", cell: (a) => badge(a.status, "attempt-status") },
      { label: "Started", key: "started", cell: (a) => when(a.started_at) },
      { label: "Ended", key: "ended", cell: (a) => when(a.ended_at) },
      { label: "Host", key: "host", cell: (a) => a.host ? `${a.host} (pid ${a.pid})` : "—" },
      { label: "Error", key: "error", cell: (a) => h("span", { class: "wrap" }, a.error ?? "") },
    ], run.attempts)] : null,
    Object.keys(run.steps_s || {}).length ? h("details", { "data-key": "steps",
      "data-testid": "run-steps" },
    h("summary", {}, "Time per step (as headwater sync --json's steps_s)"),
    table("steps-table", [
      { label: "Step", key: "step", cell: ([step]) => step },
      { label: "Seconds", key: "seconds", num: true, cell: ([, seconds]) => seconds.toFixed(3) },
    ], Object.entries(run.steps_s))) : null,
    h("details", { "data-key": "plan", "data-testid": "plan" },
      h("summary", {}, "Persisted plan"), h("pre", { class: "json" }, json(run.plan))),
    run.config ? h("details", { "data-key": "config", "data-testid": "run-config" },
      h("summary", {}, "Connection as it ran (secrets masked)"),
      h("pre", { class: "json" }, json(run.config))) : null,
  ];
}

// Once the run has ended, the server lists every planned partition, each with what became
// of it (committed, failed with its own error, cancelled when another failed, not started
// and why); an empty table then means the plan gave this stream none.
function drawStreamDetail(s, status) {
  const partitions = s.partitions || [];
  const empty = status === "running" ? "No partition reported or finished yet."
    : `No partition was planned for this stream (the run ${status}).`;
  return h("details", { class: "stream-detail", "data-key": `stream:${s.name}`,
    "data-testid": "stream-detail" },
  h("summary", {}, `${s.name}: ${plural((s.checkpoints || []).length, "checkpoint")}, `
    + `${plural(partitions.length, "partition")}`),
  h("h3", {}, "Checkpoints"),
  table("checkpoints-table", [
    { label: "#", key: "index", num: true, cell: (c) => count(c.index) },
    { label: "Checkpoint", key: "checkpoint_id", cell: (c) => h("code", {}, c.checkpoint_id ?? "—") },
    { label: "Status", key: "status", cell: (c) => badge(c.status, "checkpoint-status") },
    { label: "Records", key: "records", num: true, cell: (c) => count(c.records) },
    { label: "File bytes", key: "bytes", num: true, title: FILE_BYTES,
      cell: (c) => bytes(c.bytes) },
    { label: "Duration", key: "duration", num: true, title: CHECKPOINT_TIME,
      cell: (c) => duration(c.duration_s) },
    { label: "Commit", key: "commit", cell: (c) => h("code", { "data-testid": "commit-id" },
      c.commit === null || c.commit === undefined ? "—" : String(c.commit)) },
    { label: "Error", key: "error", cell: (c) => c.error
      ? h("span", { class: "error wrap" }, c.error) : "" },
  ], s.checkpoints || [], { empty: "No checkpoint recorded yet." }),
  h("h3", {}, "Partitions"),
  h("p", { class: "muted", "data-testid": "partition-figures-note" }, "Counted on the "
    + "executors: in-memory bytes are the rows' size before they are written (larger than "
    + "the checkpoint's file bytes); source time is the source's own, without Spark's."),
  table("partitions-table", [
    { label: "Checkpoint", key: "checkpoint", num: true, cell: (p) => count(p.checkpoint_index) },
    { label: "Partition", key: "partition_id", cell: (p) => h("code", {}, p.partition_id) },
    { label: "Status", key: "status", cell: (p) => badge(p.status, "partition-status") },
    { label: "Records", key: "records", num: true, cell: (p) => count(p.records) },
    { label: "In-memory bytes", key: "bytes", num: true, title: MEMORY_BYTES,
      cell: (p) => bytes(p.bytes) },
    { label: "Source time", key: "duration", num: true, title: SOURCE_TIME,
      cell: (p) => milliseconds(p.duration_s) },
    { label: "Error or why not committed", key: "error", cell: (p) => p.error
      ? h("span", { class: p.status === "failed" ? "error wrap" : "wrap",
        "data-testid": "partition-outcome" }, p.error) : "" },
  ], partitions.slice(0, MAX_PARTITION_ROWS), { empty }),
  partitions.length > MAX_PARTITION_ROWS
    ? h("p", { class: "muted" }, `The first ${count(MAX_PARTITION_ROWS)} of `
      + `${count(partitions.length)} partitions are shown.`) : null);
}

const READING = "Records the tasks have read so far in the checkpoints not committed yet "
  + "(reported every few seconds; counted in Records once their checkpoint commits)";

const figure = (label, value, testid, title) => h("div", { class: "figure", title },
  h("div", { class: "figure-value", "data-testid": testid }, value),
  h("div", { class: "figure-label" }, label));

const plural = (n, word) => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

const json = (value) => (value === null || value === undefined
  ? "none" : JSON.stringify(value, null, 2));
