// Connected apps: the AI apps (MCP clients) the key is connected to through
// OAuth (GET /v1/connected-apps), each with a Revoke button
// (DELETE /v1/connected-apps/{id}): its tokens stop working at once.
import { api } from './api.js';
import { el, time } from './format.js';

const $ = (id) => document.getElementById(id);

export function reset() {
  $('apps-table').tBodies[0].replaceChildren();
  $('apps-status').textContent = '';
  $('apps-error').textContent = '';
}

export async function open() {
  $('apps-error').textContent = '';
  try {
    const { data } = await api('GET', '/v1/connected-apps');
    render(data.apps);
  } catch (err) {
    $('apps-error').textContent = err.status === 404 ? 'This server does not run OAuth for apps.' : String(err);
  }
}

function render(apps) {
  const body = $('apps-table').tBodies[0];
  body.replaceChildren(...apps.map((a) => el('tr', {},
    el('td', {}, a.client_name),
    el('td', {}, el('code', {}, a.client_id)),
    el('td', {}, time(a.created_at)),
    el('td', {}, time(a.refreshed_at)),
    el('td', {}, el('button', { type: 'button', class: 'secondary small', 'aria-label': `Revoke ${a.client_name}`,
      onclick: () => revoke(a) }, 'Revoke')))));
  $('apps-empty').hidden = apps.length > 0;
}

async function revoke(app) {
  $('apps-error').textContent = '';
  try {
    await api('DELETE', `/v1/connected-apps/${encodeURIComponent(app.id)}`);
    $('apps-status').textContent = `${app.client_name} revoked: its tokens no longer work.`;
    await open();
  } catch (err) {
    $('apps-error').textContent = String(err);
  }
}
