// The actions: each is one POST to the route that runs the same code as the CLI command
// (sync, stop, replay, backfill, state reset). The two that change data by choice, backfill
// and reset, first show what they will do and wait for the person to confirm.
import { get, post, seg } from "./api.js";
import { fill, h, table } from "./dom.js";
import { count } from "./format.js";
import { notify } from "./notices.js";

/** Run `work` with `button` disabled; a refusal is shown, never thrown at the page. */
async function busy(button, work) {
  if (button) button.disabled = true;
  try {
    return await work();
  } catch (error) {
    notify(error.message, "error");
    return null;
  } finally {
    if (button) button.disabled = false;
  }
}

export async function syncNow(name, button) {
  const answer = await busy(button, () => post(`/api/connections/${seg(name)}/sync`));
  if (answer) notify(`Sync of ${name} started.`, "info", name);
  return answer;
}

export async function stopRun(runId, button) {
  const answer = await busy(button, () => post(`/api/runs/${seg(runId)}/stop`));
  if (answer) {
    notify("Stopping: the commits in flight finish first, then the run ends.", "info", runId);
  }
  return answer;
}

export async function replayRun(run, button) {
  let known = new Set();
  const answer = await busy(button, async () => {
    known = await recentRunIds(run.connection);
    return post(`/api/runs/${seg(run.run_id)}/replay`);
  });
  if (!answer) return;
  notify(`Replay of ${run.run_id} started.`, "info", answer.run_id ?? null);
  await openRun(answer, run.connection, "replay", known);
}

async function recentRunIds(connection) {
  const { runs } = await get(`/api/connections/${seg(connection)}?limit=10`);
  return new Set(runs.map((r) => r.run_id));
}

/** Open the run a job started. The server names it when it started within a few seconds;
 * otherwise (Spark still starting) the page waits for a new run of that kind to appear in
 * the connection's runs, as long as the person stays on this view. */
async function openRun(answer, connection, kind, known) {
  if (answer.run_id) {
    window.location.hash = `#/runs/${seg(answer.run_id)}`;
    return;
  }
  const here = window.location.hash;
  try {
    while (window.location.hash === here) {
      const { runs } = await get(`/api/connections/${seg(connection)}?limit=10`);
      const found = runs.find((r) => r.kind === kind && !known.has(r.run_id));
      if (found) {
        window.location.hash = `#/runs/${seg(found.run_id)}`;
        return;
      }
      await new Promise((resolve) => { setTimeout(resolve, 1000); });
    }
  } catch (error) {
    notify(error.message, "error");
  }
}

/** A modal <dialog> built for one use and removed when it closes. */
function modal(testid, title, ...body) {
  const dialog = h("dialog", { "data-testid": testid, "aria-labelledby": `${testid}-title` },
    h("h2", { id: `${testid}-title` }, title), ...body);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

const cancel = (label = "Cancel") => h("button", { type: "button", "data-testid": "dialog-cancel",
  onclick: (e) => e.currentTarget.closest("dialog").close() }, label);

/** Backfill: pick a stream and a cursor window, see the plan, then run it. */
export function backfillDialog(connection) {
  const streams = (connection.streams || []).filter((s) => s.cursor_field);
  const planArea = h("div", { "data-testid": "backfill-plan", "aria-live": "polite" });
  const run = h("button", { type: "button", class: "primary", "data-testid": "backfill-run",
    disabled: true }, "Run backfill");
  const form = h("form", { class: "stack" },
    h("p", {}, "Re-reads one stream's cursor window into its table. The stream's state "
      + "does not move. The plan is shown first; nothing runs until you press Run backfill."),
    h("label", {}, "Stream", h("select", { name: "stream", required: true },
      streams.map((s) => h("option", { value: s.name }, `${s.name} (cursor ${s.cursor_field})`)))),
    h("div", { class: "row" },
      h("label", {}, "From", h("input", { name: "from", required: true,
        placeholder: "2026-11-01", autocomplete: "off", "data-testid": "backfill-from" })),
      h("label", {}, "To", h("input", { name: "to", required: true,
        placeholder: "2026-11-20", autocomplete: "off", "data-testid": "backfill-to" }))),
    planArea,
    h("div", { class: "actions" }, cancel(),
      h("button", { type: "submit", "data-testid": "backfill-show-plan" }, "Show plan"), run));
  const dialog = modal("backfill-dialog", `Backfill ${connection.name}`,
    streams.length ? form : [h("p", {}, "No stream of this connection has a cursor: "
      + "a backfill needs one."), h("div", { class: "actions" }, cancel("Close"))]);
  const path = `/api/connections/${seg(connection.name)}/backfill`;
  let body = null;
  form.addEventListener("input", () => { run.disabled = true; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    body = { stream: data.get("stream"), from: data.get("from"), to: data.get("to") };
    const submit = form.querySelector("[type=submit]");
    const plan = await busy(submit, () => post(`${path}/plan`, body));
    if (!plan) return;
    fill(planArea, drawPlan(plan));
    run.disabled = false;
  });
  run.addEventListener("click", async () => {
    let known = new Set();
    const answer = await busy(run, async () => {
      known = await recentRunIds(connection.name);
      return post(path, body);
    });
    if (!answer) return;
    dialog.close();
    notify(`Backfill of ${body.stream} started.`, "info", answer.run_id ?? null);
    await openRun(answer, connection.name, "backfill", known);
  });
}

/** Partition ids listed in a plan; the count says how many more there are. */
const PLAN_IDS_SHOWN = 200;

function drawPlan(plan) {
  const streams = plan.streams || [];
  return [
    h("h3", {}, "The plan"),
    table("plan-table", [
      { label: "Stream", key: "name", cell: (s) => s.name },
      { label: "Partitions", key: "partitions", num: true,
        cell: (s) => count(Array.isArray(s.partitions) ? s.partitions.length : s.partitions) },
      { label: "From", key: "from", cell: (s) => s.from ?? "—" },
      { label: "To", key: "to", cell: (s) => s.to ?? "—" },
    ], streams, { empty: "Nothing to read in this window." }),
    streams.map((s) => {
      const ids = (s.partition_list || []).map((p) => p.id);
      if (!ids.length) return null;
      return h("div", {},
        h("p", { class: "muted" }, `The partitions of ${s.name} it reads:`),
        h("ol", { class: "plan-partitions", "data-testid": "plan-partitions" },
          ids.slice(0, PLAN_IDS_SHOWN).map((id) => h("li", { "data-testid": "plan-partition" },
            h("code", {}, id)))),
        ids.length > PLAN_IDS_SHOWN
          ? h("p", { class: "muted" }, `… and ${count(ids.length - PLAN_IDS_SHOWN)} more.`)
          : null);
    }),
    plan.moves_state === false
      ? h("p", { class: "muted" }, "The stream's state stays where it is.") : null,
  ];
}

/** Reset: says what will happen, and runs only once the stream's name is typed. */
export function resetDialog(connection, stream, after) {
  const current = (connection.streams || []).find((s) => s.name === stream);
  const input = h("input", { name: "confirm", autocomplete: "off", spellcheck: "false",
    "data-testid": "reset-confirm", "aria-describedby": "reset-what" });
  const go = h("button", { type: "submit", class: "danger", "data-testid": "reset-run",
    disabled: true }, "Reset state");
  const form = h("form", { class: "stack" },
    h("div", { id: "reset-what" },
      h("p", {}, "The stored state of stream ", h("strong", {}, stream), " of ",
        h("strong", {}, connection.name), " is forgotten",
        current?.state_text ? ` (now: ${current.state_text})` : "", "."),
      h("p", {}, "The next sync reads this stream from the start, as its first sync did. "
        + "Its table and its rows are not touched; other streams keep their state. "
        + "This cannot be undone from the page.")),
    h("label", {}, `Type ${stream} to confirm`, input),
    h("div", { class: "actions" }, cancel(), go));
  const dialog = modal("reset-dialog", `Reset the state of ${stream}?`, form);
  input.addEventListener("input", () => { go.disabled = input.value !== stream; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (input.value !== stream) return;
    const path = `/api/connections/${seg(connection.name)}/streams/${seg(stream)}/reset`;
    const answer = await busy(go, () => post(path, { confirm: input.value }));
    if (!answer) return;
    dialog.close();
    notify(`State of ${stream} reset: the next sync reads it from the start.`);
    after();
  });
}
