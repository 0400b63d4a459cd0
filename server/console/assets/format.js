// Formatting helpers and a tiny element builder (no innerHTML of API data,
// so nothing a receiver or a user sent can inject markup).

export function bytes(n) {
  if (n === undefined || n === null) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

// saving is the share of bytes saved, as "75.3 %" (a no-break space keeps
// the sign on the number's line).
export function saving(original, compressed) {
  if (!original || compressed === undefined || compressed === null) return '–';
  return `${((1 - compressed / original) * 100).toFixed(1)}\u00a0%`;
}

export function time(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// relative is how long ago iso was, as "just now", "5 s ago", "3 min ago",
// "2 h ago", "4 d ago"; older than a month it is the date.
export function relative(iso, now = Date.now()) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return '–';
  const s = Math.round((now - d) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 30 * 86400) return `${Math.floor(s / 86400)} d ago`;
  return d.toLocaleDateString();
}

// timeElement is a <time> reading relative time, the exact one as its title;
// refreshTimes updates the text of every such element under root.
export function timeElement(iso) {
  return el('time', { datetime: iso, title: time(iso), 'data-relative': '' }, relative(iso));
}

export function refreshTimes(root) {
  const now = Date.now();
  for (const t of root.querySelectorAll('time[data-relative]')) t.textContent = relative(t.getAttribute('datetime'), now);
}

// Job ids are UUIDv7: the first 13 characters are the creation time, so
// jobs made close together share them. idTail is the random end that tells
// them apart, as used in short names ("…3f9a0c1d").
export function idTail(id, n = 8) {
  return id ? '…' + id.slice(-n) : '';
}

// idCode shows the whole id, the distinguishing last 12 characters in bold.
export function idCode(id) {
  return el('code', { translate: 'no' }, id.slice(0, -12), el('b', {}, id.slice(-12)));
}

// inputName is what a job was made from: the file name, or the last
// segment of its URL, or the input kind.
export function inputName(input = {}) {
  if (input.filename) return input.filename;
  if (input.url) {
    try {
      const u = new URL(input.url);
      const last = u.pathname.split('/').filter(Boolean).pop();
      return last ? decodeURIComponent(last) : u.host;
    } catch {
      return input.url;
    }
  }
  return { base64: 'base64 image', upload: 'upload' }[input.kind] || 'image';
}

export const inputKinds = { url: 'URL', upload: 'Upload', base64: 'Base64' };

// copyButton copies text and says so; label names it for screen readers.
export function copyButton(text, label) {
  const b = el('button', { type: 'button', class: 'secondary small', 'aria-label': label, 'data-label': 'Copy' }, 'Copy');
  b.addEventListener('click', () => copy(text, b));
  return b;
}

// el builds an element: el('a', {href: '#x', class: 'y'}, 'text', child).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v === true) node.setAttribute(k, '');
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

// definitionList renders [label, value] pairs as a <dl>, skipping empty values.
export function definitionList(pairs) {
  const dl = el('dl');
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.append(el('dt', {}, k), el('dd', {}, v));
  }
  return dl;
}

export async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Select and copy';
  }
  setTimeout(() => { button.textContent = button.dataset.label || 'Copy'; }, 2000);
}
