// The page's one way to the server's JSON API (docs/ui.md): the Bearer token when one is
// set, the X-Headwater-Request header on every POST (the server refuses a POST without it,
// which a cross-site form cannot send), and the server's {"error": ...} as the message.

const TOKEN_KEY = "headwater.token";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** A token given as ?token= on the first load is kept for this tab and removed from the URL. */
export function takeTokenFromUrl() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token === null) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  url.searchParams.delete("token");
  window.history.replaceState(null, "", url.pathname + url.search + url.hash);
}

let askToken = async () => null;

/** How to ask the person for a token when the server answers 401 (set once by app.js). */
export function onTokenNeeded(ask) {
  askToken = ask;
}

async function call(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    if (method !== "GET") {
      headers["X-Headwater-Request"] = "1";
      headers["Content-Type"] = "application/json";
    }
    const response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({}));
    if (response.status === 401) {
      const given = await askToken(token
        ? "That token was refused. Enter the token this server was started with."
        : "This server needs its token (given to `headwater ui` with --token or "
          + "HEADWATER_UI_TOKEN). The page keeps it for this tab only.");
      if (!given) throw new ApiError(401, data.error || "A token is needed.");
      sessionStorage.setItem(TOKEN_KEY, given);
      continue;
    }
    if (!response.ok) {
      throw new ApiError(response.status, data.error || `${response.status} ${response.statusText}`);
    }
    return data;
  }
  throw new ApiError(401, "The token was refused.");
}

export const get = (path) => call("GET", path);
export const post = (path, body = {}) => call("POST", path, body);

/** Path segments are names from files and the store: always encoded. */
export const seg = (value) => encodeURIComponent(value);

/** Save the text at `path` as a file: fetched with the token (a plain link would not send
 * it), then handed to the browser as a download named by the server. */
export async function download(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const response = await fetch(path, {
    headers: token ? { Authorization: `Bearer ${token}` } : {}, credentials: "same-origin",
  });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data.error || `${response.status} ${response.statusText}`);
  }
  const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = named ? named[1] : "headwater-run.log";
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}
