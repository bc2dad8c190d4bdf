// How figures and times read on the page: thousands separators, short durations, times
// relative to now with the exact time on hover.
import { h } from "./dom.js";

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** 1234567 -> "1,234,567"; null -> "—" (not known yet). */
export function count(value) {
  return value === null || value === undefined ? "—" : integer.format(value);
}

export function rate(value) {
  if (value === null || value === undefined) return "—";
  return value >= 100 ? integer.format(value) : decimal.format(value);
}

const UNITS = ["B", "KB", "MB", "GB", "TB"];

export function bytes(value) {
  if (value === null || value === undefined) return "—";
  let n = value;
  let unit = 0;
  while (n >= 1024 && unit < UNITS.length - 1) { n /= 1024; unit += 1; }
  return `${unit ? decimal.format(n) : integer.format(n)} ${UNITS[unit]}`;
}

/** 0.004 -> "4 ms", 0.4 -> "400 ms", 2.5 -> "2.5 s", 95 -> "1 min 35 s", 7300 -> "2 h 1 min". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 1) return `${integer.format(seconds * 1000)} ms`;
  if (seconds < 60) return `${decimal.format(seconds)} s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** A time recorded to the millisecond (a partition's source time): 0 is "< 1 ms", not 0. */
export function milliseconds(seconds) {
  return seconds === 0 ? "< 1 ms" : duration(seconds);
}

/** How long ago (or, for a time to come, how soon), in words: "3 min ago", "in 2 h". */
export function relative(iso, now = Date.now()) {
  const seconds = (Date.parse(iso) - now) / 1000;
  const span = Math.abs(seconds);
  let words;
  if (span < 45) words = span < 5 ? "just now" : `${Math.round(span)} s`;
  else if (span < 3600) words = `${Math.round(span / 60)} min`;
  else if (span < 86400) words = `${Math.round(span / 3600)} h`;
  else words = `${Math.round(span / 86400)} d`;
  if (words === "just now") return seconds > 0 ? "in a moment" : words;
  return seconds > 0 ? `in ${words}` : `${words} ago`;
}

export function exact(iso) {
  return new Date(iso).toLocaleString(undefined, {
    year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short",
  });
}

/** A <time> that reads "3 min ago" and shows the exact time on hover. */
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  return h("time", { datetime: iso, title: exact(iso), "data-relative": "" }, relative(iso));
}

/** Keep every "3 min ago" on the page true while it stays open (views that stopped
 * polling, such as a finished run, are not redrawn). */
export function keepTimesFresh(every = 30000) {
  setInterval(() => {
    for (const node of document.querySelectorAll("time[data-relative]")) {
      node.textContent = relative(node.getAttribute("datetime"));
    }
  }, every);
}

/** "12 min" of data freshness (now minus the newest committed cursor). */
export function freshness(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  return seconds < 0 ? "ahead of now" : `${duration(seconds)} behind`;
}

const STATUS_WORDS = {
  succeeded: "succeeded", warned: "warned", failed: "failed", running: "running",
  stopped: "stopped",
  pending: "pending", planned: "planned", committed: "committed", released: "released",
  reading: "reading",
};

/** A status badge: the word itself is the text, the colour only repeats it. */
export function badge(status, testid = "status") {
  const word = status ? (STATUS_WORDS[status] || String(status)) : "never run";
  const kind = status ? String(status).replace(/[^a-z_-]/gi, "") : "none";
  return h("span", { class: `badge badge-${kind}`, "data-testid": testid }, word);
}
