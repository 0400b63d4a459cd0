// Hooks: the key's REST hook subscriptions, and operating them. Create one
// for any event the server offers (GET /v1/event-types; a threshold for
// account.credits_low); its signing secret is shown once, right after.
// Each hook shows its state (enabled, or disabled with the reason and
// time), its success rate over its last deliveries and its last error
// (GET /v1/deliveries?hook_id=…; a server without that log shows "–"), and
// its actions: Send test (the answer shown), Enable (when disabled),
// Recover failed deliveries since a time, Rotate secret (the new one shown
// once; both sign during the overlap), Delete.
import { api, allHooks } from './api.js';
import { time, el, timeElement, refreshTimes } from './format.js';

const recent = 20; // deliveries the success rate is taken over
let noLog = false; // the server answered 404: it keeps no delivery log
let eventsLoaded = false;

// The events a hook may subscribe to when the server does not list them
// (GET /v1/event-types is served with the definitions); job.finished is
// job.completed and job.failed together, hook.test only goes to the hook
// tested.
const fallbackEvents = ['job.finished', 'job.completed', 'job.failed', 'batch.finished', 'hook.disabled', 'account.credits_low'];
const notSubscribable = new Set(['hook.test']);
const descriptions = { 'job.finished': 'A job completed or failed: both events.' };
const defaultThreshold = 50;

const $ = (id) => document.getElementById(id);

export function init() {
  $('hook-form').addEventListener('submit', create);
  $('hook-event').addEventListener('change', eventChosen);
  eventChosen();
}

export function reset() {
  $('hooks-table').tBodies[0].replaceChildren();
  $('hooks-status').textContent = '';
  hideSecret();
}

// open lists the hooks; a secret shown on an earlier visit is not shown
// again.
export function open() {
  hideSecret();
  if (!eventsLoaded) loadEvents();
  load();
}

function hideSecret() {
  $('hook-secret').hidden = true;
  $('hook-secret-value').value = '';
}

// showSecret shows a secret once, with what it is, and moves the focus to
// it so that it can be copied at once.
function showSecret(secret, note) {
  $('hook-secret-note').textContent = note;
  $('hook-secret-value').value = secret;
  $('hook-secret').hidden = false;
  $('hook-secret-value').focus();
}

// loadEvents offers every event the server lists (and job.finished, which
// is two of them), keeping the fixed list when it lists none.
async function loadEvents() {
  let types = [];
  try {
    types = (await api('GET', '/v1/event-types')).data.event_types || [];
  } catch {
    return; // not served: the fixed list in the page stays
  }
  const offered = types.filter((t) => t.type && !notSubscribable.has(t.type));
  if (!offered.length) return;
  for (const t of offered) descriptions[t.type] = t.description;
  const names = offered.map((t) => t.type);
  if (names.includes('job.completed') && names.includes('job.failed')) names.unshift('job.finished');
  const select = $('hook-event');
  const chosen = select.value;
  select.replaceChildren(...names.map((n) => el('option', { value: n }, n === 'job.finished' ? 'job.finished (completed or failed)' : n)));
  select.value = names.includes(chosen) ? chosen : names[0];
  eventsLoaded = true;
  eventChosen();
}

// eventChosen shows the threshold only for account.credits_low, and what
// the chosen event is.
function eventChosen() {
  const event = $('hook-event').value;
  const low = event === 'account.credits_low';
  $('hook-threshold-field').hidden = !low;
  $('hook-threshold').disabled = !low;
  $('hook-event-about').textContent = descriptions[event] || '';
}

async function load() {
  $('hooks-error').textContent = '';
  try {
    const hooks = await allHooks();
    const tbody = $('hooks-table').tBodies[0];
    tbody.replaceChildren(...hooks.map(row));
    $('hooks-empty').hidden = hooks.length > 0;
    for (const h of hooks) health(h, rowOf(h.id));
  } catch (err) {
    $('hooks-error').textContent = String(err);
  }
}

function rowOf(id) {
  return $('hooks-table').tBodies[0].querySelector(`tr[data-hook="${CSS.escape(id)}"]`);
}

function state(h) {
  const disabled = h.status ? h.status === 'disabled' : h.disabled;
  if (!disabled) return el('span', { class: 'badge delivered' }, 'Active');
  const why = { gone: 'its target answered 410 Gone', failing: 'every attempt failed for too long' }[h.disabled_reason] || h.disabled_reason || 'no reason given';
  return el('span', {}, el('span', { class: 'badge failed' }, 'Disabled'), ` (${why}`,
    h.disabled_at ? [', ', timeElement(h.disabled_at)] : null, ')');
}

function row(h) {
  const disabled = h.status ? h.status === 'disabled' : h.disabled;
  const to = h.target_url;
  const button = (label, name, fn) => el('button', { type: 'button', class: 'secondary small', 'aria-label': `${name} ${to}`,
    onclick: (e) => fn(h, e.currentTarget) }, label);
  return el('tr', { 'data-hook': h.id },
    el('td', {}, el('code', {}, to)),
    el('td', {}, h.event, h.threshold !== undefined && h.threshold !== null ? el('span', { class: 'meta' }, ` (≤\u00a0${h.threshold} credits)`) : null),
    el('td', {}, timeElement(h.created_at)),
    el('td', { class: 'hook-state' }, state(h)),
    el('td', { class: 'hook-rate' }, '…'),
    el('td', { class: 'hook-last-error' }, '…'),
    el('td', {}, el('div', { class: 'hook-actions' },
      button('Send test', 'Send test to', sendTest),
      disabled ? button('Enable', 'Enable hook to', enable) : null,
      button('Recover…', 'Recover failed deliveries to', openRecover),
      button('Rotate secret', 'Rotate secret of hook to', rotate),
      button('Delete', 'Delete hook to', remove))));
}

// detail shows (or replaces) the panel under a hook's row: a test's answer
// or the recovery form.
function detail(h, kind, ...children) {
  const tr = rowOf(h.id);
  if (!tr) return null;
  const next = tr.nextElementSibling;
  if (next?.classList.contains('hook-detail')) next.remove();
  const panel = el('tr', { class: `hook-detail ${kind}`, 'data-detail-of': h.id },
    el('td', { colspan: String(tr.cells.length) }, children));
  tr.after(panel);
  return panel;
}

function closeDetail(h) {
  const next = rowOf(h.id)?.nextElementSibling;
  if (next?.classList.contains('hook-detail')) next.remove();
}

// replaceRow redraws a hook's row from the API's answer, keeping its
// health cells and the panel under it.
function replaceRow(h) {
  const old = rowOf(h.id);
  if (!old) return null;
  const tr = row(h);
  for (const c of ['hook-rate', 'hook-last-error']) tr.querySelector(`.${c}`).replaceWith(old.querySelector(`.${c}`));
  old.replaceWith(tr);
  refreshTimes(tr);
  return tr;
}

function say(text) {
  $('hooks-status').textContent = text;
}

async function create(event) {
  event.preventDefault();
  hideSecret();
  $('hooks-error').textContent = '';
  const target = $('hook-target').value.trim();
  const body = { target_url: target, event: $('hook-event').value };
  if (body.event === 'account.credits_low') {
    const t = $('hook-threshold').value.trim();
    if (t !== '') body.threshold = Number(t);
  }
  try {
    const { data } = await api('POST', '/v1/hooks', { body });
    $('hook-form').reset();
    eventChosen();
    await load();
    showSecret(data.secret, 'Signing secret of the new hook, shown once: keep it to verify its deliveries.');
  } catch (err) {
    $('hooks-error').textContent = String(err);
  }
}

async function remove(h, button) {
  button.disabled = true;
  try {
    await api('DELETE', `/v1/hooks/${encodeURIComponent(h.id)}`);
    await load();
    $('hooks-title').focus();
  } catch (err) {
    $('hooks-error').textContent = String(err);
    button.disabled = false;
  }
}

// sendTest posts a signed hook.test event now and shows the receiver's
// answer: HTTP status, duration and the start of its body, or the error.
async function sendTest(h, button) {
  button.disabled = true;
  say(`Sending a test to ${h.target_url}…`);
  try {
    const { data: a } = await api('POST', `/v1/hooks/${encodeURIComponent(h.id)}/test`);
    const ok = a.status === 'delivered';
    const summary = `Test to ${h.target_url}: ${ok ? 'delivered' : 'failed'}` +
      `${a.status_code ? `, HTTP ${a.status_code}` : ''} in ${a.duration_ms ?? 0} ms${!ok && a.error ? ` (${a.error})` : ''}.`;
    detail(h, 'hook-test',
      el('p', {}, el('strong', {}, 'Test: '), el('span', { class: `badge ${a.status}` }, a.status)),
      el('dl', {},
        el('dt', {}, 'HTTP status'), el('dd', { class: 'test-code' }, a.status_code ? String(a.status_code) : '–'),
        el('dt', {}, 'Duration'), el('dd', { class: 'test-duration' }, `${a.duration_ms ?? 0} ms`),
        el('dt', {}, 'Answer'), el('dd', { class: 'test-response' }, a.response ? el('code', { class: 'snippet' }, a.response) : '–'),
        a.error ? [el('dt', {}, 'Error'), el('dd', { class: 'test-error' }, a.error)] : null,
        el('dt', {}, 'webhook-id'), el('dd', {}, el('code', {}, a.delivery_id))));
    say(summary);
  } catch (err) {
    say('');
    $('hooks-error').textContent = String(err);
  } finally {
    if (button.isConnected) button.disabled = false;
  }
}

async function enable(h, button) {
  button.disabled = true;
  try {
    const { data } = await api('POST', `/v1/hooks/${encodeURIComponent(h.id)}/enable`);
    const tr = replaceRow(data);
    say(`Hook to ${h.target_url} enabled: it gets events again.`);
    // The Enable button is gone; its neighbour keeps the focus in the row.
    tr?.querySelector('.hook-actions button')?.focus();
  } catch (err) {
    $('hooks-error').textContent = String(err);
    button.disabled = false;
  }
}

// localInput is a time as a datetime-local input's value, in this
// browser's time zone, to the minute.
function localInput(d) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

let formCounter = 0;

// openRecover shows the recovery form under the hook: failed deliveries
// since a time (24 h ago by default) are sent once more.
function openRecover(h) {
  const id = `recover-since-${++formCounter}`;
  const input = el('input', { id, name: 'since', type: 'datetime-local', required: true, value: localInput(new Date(Date.now() - 24 * 3600 * 1000)) });
  const result = el('p', { class: 'recover-result' });
  const form = el('form', { class: 'inline recover-form', 'aria-label': `Recover deliveries to ${h.target_url}` },
    el('div', { class: 'field' }, el('label', { for: id }, 'Recover failed deliveries since'), input),
    el('button', { type: 'submit' }, 'Recover'),
    el('button', { type: 'button', class: 'secondary', onclick: () => { closeDetail(h); rowOf(h.id)?.querySelector('.hook-actions button')?.focus(); } }, 'Cancel'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    recover(h, input, form.querySelector('button[type="submit"]'), result);
  });
  detail(h, 'hook-recover', form,
    el('p', { class: 'hint' }, 'Every delivery to this hook that ended failed since then is sent once more (same webhook-id, fresh signature).'), result);
  input.focus();
}

async function recover(h, input, button, result) {
  const since = new Date(input.value);
  if (!input.value || isNaN(since)) {
    result.textContent = 'Choose a date and time.';
    input.focus();
    return;
  }
  button.disabled = true;
  result.textContent = '';
  try {
    const { data } = await api('POST', `/v1/hooks/${encodeURIComponent(h.id)}/recover`, { body: { since: since.toISOString() } });
    const text = `${data.queued} queued: ${data.queued === 1 ? 'the failed delivery' : `failed deliveries`} to ${h.target_url} since ${time(since.toISOString())} will be sent again.`;
    result.textContent = text;
    say(text);
  } catch (err) {
    result.textContent = String(err);
    say(String(err));
  } finally {
    button.disabled = false;
  }
}

// rotate asks first, then shows the new secret once; until the overlap
// ends every delivery carries both signatures, so either secret verifies.
async function rotate(h, button) {
  if (!window.confirm(`Rotate the signing secret of the hook to ${h.target_url}? Its receiver must switch to the new secret before the previous one stops signing.`)) return;
  button.disabled = true;
  hideSecret();
  try {
    const { data } = await api('POST', `/v1/hooks/${encodeURIComponent(h.id)}/rotate-secret`);
    replaceRow(data);
    const until = data.previous_secret_expires_at;
    showSecret(data.secret, `New signing secret of the hook to ${h.target_url}, shown once. ` +
      (until ? `Until ${time(until)} every delivery carries two signatures, one with this secret and one with the previous one, so both secrets are valid; then only this one.`
        : 'The previous secret no longer signs.'));
    say(`Secret of the hook to ${h.target_url} rotated.`);
  } catch (err) {
    $('hooks-error').textContent = String(err);
  } finally {
    if (button.isConnected) button.disabled = false;
  }
}

// health fills a hook's success rate and last error from its last
// deliveries: delivered ones over those that ended (pending ones are not
// counted yet); the last error is the newest failed attempt's.
async function health(h, tr) {
  if (!tr) return;
  const rate = tr.querySelector('.hook-rate');
  const last = tr.querySelector('.hook-last-error');
  let list;
  try {
    if (noLog) throw new Error('no delivery log');
    const q = new URLSearchParams({ hook_id: h.id, limit: String(recent) });
    list = (await api('GET', `/v1/deliveries?${q}`)).data.deliveries || [];
  } catch (err) {
    if (err.status === 404) noLog = true;
    rate.textContent = '–';
    last.textContent = '–';
    rate.title = 'This server keeps no delivery log across jobs.';
    return;
  }
  const ended = list.filter((d) => d.status === 'delivered' || d.status === 'failed');
  const ok = ended.filter((d) => d.status === 'delivered').length;
  rate.textContent = ended.length ? `${Math.round((100 * ok) / ended.length)}\u00a0% of ${ended.length}` : 'no deliveries yet';
  const failed = list.flatMap((d) => d.attempts || []).filter((a) => a.outcome !== 'delivered')
    .sort((a, b) => String(b.at).localeCompare(String(a.at)))[0];
  last.textContent = failed
    ? `${failed.status_code ? `HTTP ${failed.status_code}` : failed.error || failed.outcome}, ${time(failed.at)}`
    : 'none';
}
