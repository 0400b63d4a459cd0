// Hooks: the key's REST hook subscriptions; create one (its signing secret
// is shown once, right after), delete one.
import { api } from './api.js';
import { time, el } from './format.js';

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
  } catch (err) {
    $('hooks-error').textContent = String(err);
  }
}

function row(h) {
  return el('tr', { 'data-hook': h.id },
    el('td', {}, el('code', {}, h.target_url)),
    el('td', {}, h.event),
    el('td', {}, time(h.created_at)),
    el('td', {}, h.disabled ? 'Disabled (its target answered 410 Gone)' : 'Active'),
    el('td', {}, el('button', { type: 'button', 'aria-label': `Delete hook to ${h.target_url}`, onclick: (e) => remove(h, e.currentTarget) }, 'Delete')));
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
