// Messages to the person: what an action did, or why it was refused.
import { h } from "./dom.js";

/** A message in the notice area (read out by screen readers); errors stay until dismissed. */
export function notify(message, kind = "info") {
  const area = document.getElementById("notices");
  // The same message still shown is not shown twice (a poll that keeps failing).
  if ([...area.children].some((n) => n.dataset.kind === kind && n.dataset.message === message)) {
    return;
  }
  const note = h("div", { class: `notice notice-${kind}`, "data-testid": `notice-${kind}`,
    role: kind === "error" ? "alert" : "status", "data-kind": kind, "data-message": message },
  h("span", {}, message),
  h("button", { type: "button", class: "link", "aria-label": "Dismiss",
    onclick: () => note.remove() }, "×"));
  area.append(note);
  if (kind !== "error") setTimeout(() => note.remove(), 8000);
}
