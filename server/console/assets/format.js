// Formatting helpers and a tiny element builder (no innerHTML of API data,
// so nothing a receiver or a user sent can inject markup).

export function bytes(n) {
  if (n === undefined || n === null) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

// saving is the share of bytes saved, as "75.3 %".
export function saving(original, compressed) {
  if (!original || compressed === undefined || compressed === null) return '–';
  return `${((1 - compressed / original) * 100).toFixed(1)} %`;
}

export function time(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

export function shortID(id) {
  return id ? id.slice(0, 8) : '';
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
