// Deliveries: every callback and hook delivery of the key across jobs,
// newest first (by first attempt), from GET /v1/deliveries; filtered by
// status and hook, paged with "Load more". A job's delivery links to the
// job and can be sent again (POST /v1/jobs/{id}/deliveries/{id}/redeliver);
// events that are not a job's (hook.test, hook.disabled, credits_low) have
// no such route, so they get no button.
import { api, allHooks } from './api.js';
import { el, idTail, timeElement, refreshTimes } from './format.js';

const $ = (id) => document.getElementById(id);
const pageSize = 25;
let cursor = '';
let generation = 0; // a newer list request makes older answers stale
const shown = new Set(); // delivery ids listed, so a page never lists one twice

export function init() {
  $('dlv-status').addEventListener('change', load);
  $('dlv-hook').addEventListener('change', load);
  $('dlv-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  $('dlv-more').addEventListener('click', more);
}

export function reset() {
  generation++;
  cursor = '';
  shown.clear();
  $('dlv-table').tBodies[0].replaceChildren();
  $('dlv-hook').replaceChildren(el('option', { value: '' }, 'All hooks and callbacks'));
  $('dlv-status').value = '';
}

export function open() {
  hookChoices();
  load();
}

// hookChoices fills the hook filter with the key's hooks (every page),
// keeping the choice made when that hook is still there.
async function hookChoices() {
  const select = $('dlv-hook');
  const chosen = select.value;
  let hooks;
  try {
    hooks = await allHooks();
  } catch (err) {
    $('dlv-error').textContent = String(err);
    return;
  }
  select.replaceChildren(el('option', { value: '' }, 'All hooks and callbacks'),
    ...hooks.map((h) => el('option', { value: h.id },
      `${h.target_url} (${h.event}${h.status === 'disabled' ? ', disabled' : ''}) ${idTail(h.id)}`)));
  if (hooks.some((h) => h.id === chosen)) select.value = chosen;
}

async function fetchPage(after) {
  const q = new URLSearchParams({ limit: String(pageSize) });
  if ($('dlv-status').value) q.set('status', $('dlv-status').value);
  if ($('dlv-hook').value) q.set('hook_id', $('dlv-hook').value);
  if (after) q.set('cursor', after);
  const { data } = await api('GET', `/v1/deliveries?${q}`);
  return data;
}

async function load() {
  const gen = ++generation;
  $('dlv-error').textContent = '';
  $('dlv-table').setAttribute('aria-busy', 'true');
  try {
    const page = await fetchPage('');
    if (gen !== generation) return;
    shown.clear();
    $('dlv-table').tBodies[0].replaceChildren();
    append(page);
  } catch (err) {
    if (gen === generation) {
      $('dlv-error').textContent = err.status === 404 ? 'This server keeps no delivery log across jobs.' : String(err);
    }
  } finally {
    if (gen === generation) $('dlv-table').removeAttribute('aria-busy');
  }
}

async function more() {
  if (!cursor) return;
  const gen = generation;
  const button = $('dlv-more');
  button.disabled = true;
  try {
    const page = await fetchPage(cursor);
    if (gen !== generation) return;
    const first = append(page);
    // Keyboard and screen reader users continue from the first row that
    // came in (the row itself when it has no link or button).
    if (first) {
      const target = first.querySelector('a, button') || first;
      if (target === first) first.tabIndex = -1;
      target.focus();
    }
  } catch (err) {
    if (gen === generation) $('dlv-error').textContent = String(err);
  } finally {
    button.disabled = false;
  }
}

// append lists a page's deliveries (skipping any already listed) and
// returns the first new row.
function append(page) {
  const tbody = $('dlv-table').tBodies[0];
  let first = null;
  for (const d of page.deliveries || []) {
    if (shown.has(d.id)) continue;
    shown.add(d.id);
    const tr = row(d);
    tbody.append(tr);
    first ||= tr;
  }
  cursor = page.next_cursor || '';
  $('dlv-more').hidden = !cursor;
  const filtered = $('dlv-status').value || $('dlv-hook').value;
  $('dlv-empty').textContent = filtered ? 'No deliveries match these filters.' : 'No deliveries yet: they appear when a job with a callback URL or a hook finishes.';
  $('dlv-empty').hidden = shown.size > 0;
  refreshTimes(tbody);
  return first;
}

// lastResult is what the newest attempt got: its HTTP status, else its error.
export function lastResult(d) {
  const a = (d.attempts || [])[d.attempts.length - 1];
  if (!a) return 'not attempted yet';
  if (a.status_code) return `HTTP ${a.status_code}`;
  return a.error || a.outcome;
}

function row(d) {
  const attempts = d.attempts || [];
  const first = attempts[0];
  const jobCell = d.job_id
    ? el('a', { href: `#/jobs/${encodeURIComponent(d.job_id)}`, title: d.job_id }, `Job ${idTail(d.job_id)}`)
    : el('span', { class: 'meta' }, '–');
  const action = d.job_id
    ? el('button', { type: 'button', class: 'secondary small', 'aria-label': `Redeliver ${d.event} to ${d.target || 'its target'}`,
      onclick: (e) => redeliver(d, e.currentTarget) }, 'Redeliver')
    : null;
  return el('tr', { 'data-delivery': d.id },
    el('td', { class: 'nowrap' }, first ? timeElement(first.at) : '–'),
    el('td', {}, el('code', {}, d.event)),
    el('td', {}, el('code', {}, d.target || '–')),
    el('td', {}, d.kind === 'hook' ? `hook ${idTail(d.hook_id)}` : d.kind),
    el('td', {}, el('span', { class: `badge ${d.status}` }, d.status)),
    el('td', { class: 'dlv-attempts' }, String(attempts.length)),
    el('td', { class: 'dlv-last' }, lastResult(d)),
    el('td', {}, jobCell),
    el('td', {}, action));
}

// redeliver queues the job's delivery once more and waits (up to 15 s)
// for the worker's attempt, then redraws the row from the job's log.
async function redeliver(d, button) {
  const status = $('dlv-status-line');
  button.disabled = true;
  const path = `/v1/jobs/${encodeURIComponent(d.job_id)}/deliveries`;
  try {
    await api('POST', `${path}/${encodeURIComponent(d.id)}/redeliver`);
    status.textContent = `Redelivery of ${d.event} to ${d.target} queued…`;
    const before = (d.attempts || []).length;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 750));
      const now = ((await api('GET', path)).data.deliveries || []).find((x) => x.id === d.id);
      if (now && now.attempts.length > before) {
        const tr = $('dlv-table').querySelector(`tr[data-delivery="${CSS.escape(d.id)}"]`);
        const fresh = row({ ...now, job_id: d.job_id });
        if (tr) {
          tr.replaceWith(fresh);
          refreshTimes(fresh);
          fresh.querySelector('button')?.focus();
        }
        const last = now.attempts[now.attempts.length - 1];
        status.textContent = `Redelivered ${d.event} to ${d.target}: ${last.outcome}${last.status_code ? ` (HTTP ${last.status_code})` : ''}.`;
        return;
      }
    }
    status.textContent = 'Redelivery queued; it has not been attempted yet. Refresh the list to see it.';
  } catch (err) {
    status.textContent = '';
    $('dlv-error').textContent = String(err);
  } finally {
    if (button.isConnected) button.disabled = false;
  }
}
