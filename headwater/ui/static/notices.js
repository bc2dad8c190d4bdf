// Messages to the person: what an action did, or why it was refused.
import { h } from "./dom.js";

/** A message in the notice area (read out by screen readers); errors stay until dismissed.
 * `about`: the run (or connection) the message is about. Such a message says something
 * only while that run goes ("Stopping: ..."), so it stays until the page sees the run end
 * (`settle`) or the person leaves for a view of something else (`leaving`), not a fixed
 * time: a timer let it outlive its run, or vanish while the run still went. Any other
 * message that is no error goes after 8 s, or with its view. */
export function notify(message, kind = "info", about = null) {
  const area = document.getElementById("notices");
  // The same message still shown is not shown twice (a poll that keeps failing).
  if ([...area.children].some((n) => n.dataset.kind === kind && n.dataset.message === message)) {
    return;
  }
  const note = h("div", { class: `notice notice-${kind}`, "data-testid": `notice-${kind}`,
    role: kind === "error" ? "alert" : "status", "data-kind": kind, "data-message": message,
    "data-about": about },
  h("span", {}, message),
  h("button", { type: "button", class: "link", "aria-label": "Dismiss",
    onclick: () => note.remove() }, "×"));
  area.append(note);
  if (kind !== "error" && about === null) setTimeout(() => note.remove(), 8000);
}

function notes() {
  return [...document.getElementById("notices").children];
}

/** The run (or connection) `subject` ended or is idle: its messages are said and gone. */
export function settle(subject) {
  for (const note of notes()) if (note.dataset.about === subject) note.remove();
}

/** A view of `subjects` opens: what the view left said ("State of users reset", "Stopping"
 * about another run) goes with it; errors stay until dismissed. */
export function leaving(subjects) {
  for (const note of notes()) {
    if (note.dataset.kind !== "error" && !subjects.includes(note.dataset.about)) note.remove();
  }
}
