// Hooks: the key's REST hook subscriptions; create one (its signing secret
// is shown once, right after), delete one. Each hook shows its success rate
// over its last deliveries and its last error, from the key's delivery log
// (GET /v1/deliveries?hook_id=…); a server without that log shows "–".
import { api } from './api.js';
import { time, el, timeElement } from './format.js';

const recent = 20; // deliveries the success rate is taken over
let noLog = false; // the server answered 404: it keeps no delivery log

const $ = (id) => document.getElementById(id);

export function init() {
  $('hook-form').addEventListener('submit', create);
}

export function reset() {
  $('hooks-table').tBodies[0].replaceChildren();
  hideSecret();
}

export function open() {
  load();
}

function hideSecret() {
  $('hook-secret').hidden = true;
  $('hook-secret-value').value = '';
}

async function load() {
  $('hooks-error').textContent = '';
  try {
    const { data } = await api('GET', '/v1/hooks');
    const tbody = $('hooks-table').tBodies[0];
    tbody.replaceChildren(...data.hooks.map(row));
    $('hooks-empty').hidden = data.hooks.length > 0;
    for (const h of data.hooks) health(h, tbody.querySelector(`tr[data-hook="${CSS.escape(h.id)}"]`));
  } catch (err) {
    $('hooks-error').textContent = String(err);
  }
}

function row(h) {
  return el('tr', { 'data-hook': h.id },
    el('td', {}, el('code', {}, h.target_url)),
    el('td', {}, h.event),
    el('td', {}, timeElement(h.created_at)),
    el('td', {}, h.disabled ? `Disabled (${h.disabled_reason || 'its target answered 410 Gone'})` : 'Active'),
    el('td', { class: 'hook-rate' }, '…'),
    el('td', { class: 'hook-last-error' }, '…'),
    el('td', {}, el('button', { type: 'button', class: 'secondary', 'aria-label': `Delete hook to ${h.target_url}`, onclick: (e) => remove(h, e.currentTarget) }, 'Delete')));
}

async function create(event) {
  event.preventDefault();
  hideSecret();
  $('hooks-error').textContent = '';
  const target = $('hook-target').value.trim();
  try {
    const { data } = await api('POST', '/v1/hooks', { body: { target_url: target, event: $('hook-event').value } });
    $('hook-form').reset();
    $('hook-secret-value').value = data.secret;
    $('hook-secret').hidden = false;
    await load();
    $('hook-secret-value').focus();
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
