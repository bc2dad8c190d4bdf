// The page's entry: hash routes (#/, #/connections/NAME, #/runs/RUN_ID), one view at a
// time; leaving a view aborts its requests' follow-ups and stops its polling.
import { onTokenNeeded, takeTokenFromUrl } from "./api.js";
import { h, fill } from "./dom.js";
import { keepTimesFresh } from "./format.js";
import { leaving, notify } from "./notices.js";
import { renderConnections } from "./view-connections.js";
import { renderConnection } from "./view-connection.js";
import { renderRun } from "./view-run.js";

const ROUTES = [
  [/^#?\/?(?:\?.*)?$/, renderConnections],  // #/?q=...: the list's search (view-connections.js)
  [/^#\/connections\/([^/]+)$/, renderConnection],
  [/^#\/runs\/([^/]+)$/, renderRun],
];

/** What a view gets: where to draw, how to say something, and polling that stops with it. */
class ViewContext {
  constructor(main) {
    this.main = main;
    this.controller = new AbortController();
  }

  get stopped() {
    return this.controller.signal.aborted;
  }

  /** Call `step` now and again `delay(result)` ms after it settles, until the view ends or
   * `delay` gives null. One call at a time: a slow server is never asked twice at once. */
  poll(step, delay) {
    const run = async () => {
      if (this.stopped) return;
      let wait;
      try {
        wait = delay(await step());
      } catch (error) {
        if (this.stopped) return;
        if (error.status === 404) {  // nothing to wait for: one error page, no repeated notice
          this.stop();
          showError(this.main, error.message);
          return;
        }
        notify(error.message, "error");
        wait = 5000;
      }
      if (wait !== null && !this.stopped) setTimeout(run, wait);
    };
    return run();
  }

  stop() {
    this.controller.abort();
  }
}

/** The view's place, given to why it cannot be shown (an unknown run or connection). */
function showError(main, message) {
  fill(main, h("h1", {}, "Could not load this page"),
    h("p", { class: "error", "data-testid": "page-error" }, message),
    h("p", {}, h("a", { href: "#/" }, "Back to the connections")));
}

let current = null;

async function route() {
  if (current) current.stop();
  const main = document.getElementById("view");
  const ctx = new ViewContext(main);
  current = ctx;
  const hash = window.location.hash || "#/";
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(hash);
    if (!match) continue;
    // The run or connection the view shows: messages about anything else are left behind.
    leaving(match.slice(1).map(decodeURIComponent));
    try {
      await render(ctx, ...match.slice(1).map(decodeURIComponent));
    } catch (error) {
      if (!ctx.stopped) showError(main, error.message);
    }
    main.focus({ preventScroll: true });
    return;
  }
  fill(main, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Connections")));
}

let asking = null;  // one question at a time, however many requests were refused

function askToken(reason) {
  if (asking) return asking;
  const dialog = document.getElementById("token-dialog");
  document.getElementById("token-reason").textContent = reason;
  const input = dialog.querySelector("input");
  input.value = "";
  dialog.returnValue = "";
  dialog.querySelector("[data-close]").onclick = () => dialog.close("cancel");
  dialog.showModal();
  asking = new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      asking = null;
      resolve(dialog.returnValue === "ok" ? input.value.trim() || null : null);
    }, { once: true });
  });
  return asking;
}

takeTokenFromUrl();
keepTimesFresh();
onTokenNeeded(askToken);
window.addEventListener("hashchange", route);
route();
