// Messages to the person: what an action did, or why it was refused.
import { h } from "./dom.js";

/** A message in the notice area (read out by screen readers); errors stay until dismissed. */
export function notify(message, kind = "info") {
  const area = document.getElementById("notices");
  const note = h("div", { class: `notice notice-${kind}`, "data-testid": `notice-${kind}`,
    role: kind === "error" ? "alert" : "status" },
  h("span", {}, message),
  h("button", { type: "button", class: "link", "aria-label": "Dismiss",
    onclick: () => note.remove() }, "×"));
  area.append(note);
  if (kind !== "error") setTimeout(() => note.remove(), 8000);
}
