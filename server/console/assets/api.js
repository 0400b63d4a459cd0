// The public API, called with the signed-in key. The key lives in this
// tab's sessionStorage and travels only in the X-API-Key header: never in
// a URL, so it cannot end up in logs, history or a Referer.

const storageKey = 'imgflow.apiKey';

export function getKey() {
  return sessionStorage.getItem(storageKey) || '';
}

export function setKey(key) {
  sessionStorage.setItem(storageKey, key);
}

export function clearKey() {
  sessionStorage.removeItem(storageKey);
}

// ApiError carries the API's error code and message ({"error", "code"}).
export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
  toString() {
    return this.code ? `${this.code}: ${this.message}` : this.message;
  }
}

// api sends one request. body may be a FormData (multipart), an object
// (JSON) or undefined. It resolves to {status, data, headers}; an answer of
// 400 and above rejects with an ApiError.
export async function api(method, path, { body, key = getKey(), raw = false } = {}) {
  const headers = {};
  if (key) headers['X-API-Key'] = key;
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body: payload, credentials: 'omit', cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'network_error', 'The server could not be reached: ' + err.message);
  }
  if (res.status >= 400) {
    let data = {};
    try {
      data = await res.json();
    } catch {
      // not JSON: keep the status text
    }
    throw new ApiError(res.status, data.code || '', data.error || `${res.status} ${res.statusText}`, data);
  }
  if (raw) return { status: res.status, data: await res.blob(), headers: res.headers };
  const text = await res.text();
  return { status: res.status, data: text ? JSON.parse(text) : null, headers: res.headers };
}

// allHooks is every hook of the key: GET /v1/hooks page after page (100
// a page, at most 20 pages: more than any key may have).
export async function allHooks() {
  const hooks = [];
  let next = '';
  for (let i = 0; i < 20; i++) {
    const q = new URLSearchParams({ limit: '100' });
    if (next) q.set('cursor', next);
    const { data } = await api('GET', `/v1/hooks?${q}`);
    hooks.push(...data.hooks);
    if (!(next = data.next_cursor)) break;
  }
  return hooks;
}
