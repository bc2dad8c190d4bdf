// Building elements without innerHTML: every value from the API is set as text or an
// attribute, so a connection name or a log line can never become markup on the page.

/**
 * h("a", {href: "#/", "data-testid": "home"}, "Home") -> <a href="#/" data-testid="home">Home</a>
 * Attributes whose value is null, undefined or false are left out; `on*` functions become
 * listeners; children may be strings, numbers, nodes, arrays or null (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const node = tag === "svg" || SVG_TAGS.has(tag)
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2).toLowerCase(), value);
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

const SVG_TAGS = new Set(["rect", "line", "polyline", "path", "g", "title", "text", "circle"]);

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : String(child));
  }
}

/** Replace what `node` holds with `children`. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** A table that scrolls sideways on a narrow screen; `num` marks numeric columns, a
 * column's `title` says on hover what its figures are. */
export function table(testid, columns, rows, { empty = "Nothing yet." } = {}) {
  if (!rows.length) return h("p", { class: "empty", "data-testid": `${testid}-empty` }, empty);
  return h("div", { class: "table-wrap" },
    h("table", { "data-testid": testid },
      h("thead", {}, h("tr", {}, columns.map((c) =>
        h("th", { scope: "col", class: c.num ? "num" : null, title: c.title }, c.label)))),
      h("tbody", {}, rows.map((row) => h("tr", { "data-testid": `${testid}-row` },
        columns.map((c) => h("td", { class: c.num ? "num" : null, "data-col": c.key },
          c.cell(row))))))));
}

/** One term and its value in a <dl class="facts">. */
export const fact = (term, value) => h("div", {}, h("dt", {}, term), h("dd", {}, value));

/** A file's own name, without its folder (the whole path goes in a title, on hover). */
export const baseName = (path) => (path ? String(path).split(/[\\/]/).pop() : "—");
