// Jobs: the key's jobs newest first, one job's details, and its deliveries
// with every attempt and a Redeliver button.
import { api } from './api.js';
import { bytes, saving, time, shortID, el, definitionList } from './format.js';

const $ = (id) => document.getElementById(id);
let cursor = '';
let current = ''; // id of the job shown in the detail view

export function init() {
  $('jobs-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    openList();
  });
  $('jobs-more').addEventListener('click', () => load(false));
}

export function reset() {
  $('jobs-table').tBodies[0].replaceChildren();
  $('job-detail').replaceChildren();
  $('deliveries').replaceChildren();
  current = '';
}

export function openList() {
  load(true);
}

async function load(fresh) {
  const tbody = $('jobs-table').tBodies[0];
  $('jobs-error').textContent = '';
  if (fresh) cursor = '';
  const q = new URLSearchParams({ limit: '20' });
  const status = $('jobs-status').value;
  if (status) q.set('status', status);
  if (cursor) q.set('cursor', cursor);
  try {
    const { data } = await api('GET', `/v1/jobs?${q}`);
    if (fresh) tbody.replaceChildren();
    for (const job of data.jobs) tbody.append(row(job));
    cursor = data.next_cursor || '';
    $('jobs-more').hidden = !cursor;
    $('jobs-empty').hidden = tbody.rows.length > 0;
  } catch (err) {
    $('jobs-error').textContent = String(err);
  }
}

function sizes(job) {
  const r = job.result || {};
  return { original: r.original_size ?? job.input?.size, compressed: r.compressed_size };
}

function row(job) {
  const s = sizes(job);
  return el('tr', {},
    el('td', {}, el('a', { href: `#/jobs/${encodeURIComponent(job.id)}`, title: job.id, 'aria-label': `Job ${job.id}` },
      el('code', {}, shortID(job.id)))),
    el('td', {}, el('span', { class: `badge ${job.status}` }, job.status)),
    el('td', {}, bytes(s.original)),
    el('td', {}, bytes(s.compressed)),
    el('td', {}, saving(s.original, s.compressed)),
    el('td', {}, time(job.created_at)));
}

export async function openJob(id) {
  current = id;
  $('job-title').textContent = `Job ${shortID(id)}`;
  $('job-error').textContent = '';
  $('job-detail').replaceChildren();
  $('deliveries').replaceChildren();
  $('deliveries-status').textContent = '';
  try {
    const { data: job } = await api('GET', `/v1/jobs/${encodeURIComponent(id)}`);
    if (current !== id) return;
    $('job-detail').replaceChildren(...detail(job));
    await showDeliveries(id);
  } catch (err) {
    $('job-error').textContent = String(err);
  }
}

function detail(job) {
  const out = [definitionList([
    ['ID', el('code', {}, job.id)],
    ['Status', el('span', { class: `badge ${job.status}` }, job.status)],
    ['Created', time(job.created_at)],
    ['Started', job.started_at && time(job.started_at)],
    ['Finished', job.finished_at && time(job.finished_at)],
    ['Worker attempts', job.attempts],
  ])];
  const i = job.input || {};
  out.push(el('h3', {}, 'Input'), definitionList([
    ['Kind', i.kind], ['URL', i.url], ['File name', i.filename], ['Size', i.size && bytes(i.size)], ['Type', i.mime_type],
  ]));
  if (job.result) {
    const r = job.result;
    const download = el('button', { type: 'button', onclick: () => downloadFile(job) }, 'Download compressed image');
    out.push(el('h3', {}, 'Result'), definitionList([
      ['Original', bytes(r.original_size)], ['Compressed', bytes(r.compressed_size)],
      ['Saving', saving(r.original_size, r.compressed_size)], ['Type', r.mime_type], ['File name', r.filename],
      ['Credits remaining', r.credits_remaining],
    ]), el('p', {}, download));
  }
  if (job.error) {
    const e = job.error;
    out.push(el('h3', {}, 'Error'), definitionList([
      ['Code', el('code', {}, e.code)], ['Message', e.message], ['Upstream status', e.upstream_status],
      ['Credits remaining', e.credits_remaining], ['Retryable', e.retryable ? 'yes' : 'no'],
    ]));
  }
  if (job.callback) {
    const c = job.callback;
    out.push(el('h3', {}, 'Callback'), definitionList([
      ['Status', c.status], ['Attempts', c.attempts], ['Last HTTP status', c.last_status],
      ['Last error', c.last_error], ['Delivered', c.delivered_at && time(c.delivered_at)],
    ]));
  }
  if (job.metadata) {
    out.push(el('h3', {}, 'Metadata'), el('pre', {}, JSON.stringify(job.metadata, null, 2)));
  }
  return out;
}

async function downloadFile(job) {
  try {
    const { data: blob } = await api('GET', `/v1/jobs/${encodeURIComponent(job.id)}/file`, { raw: true });
    const url = URL.createObjectURL(blob);
    const a = el('a', { href: url, download: job.result.filename || 'compressed' });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    $('job-error').textContent = String(err);
  }
}

async function fetchDeliveries(id) {
  const { data } = await api('GET', `/v1/jobs/${encodeURIComponent(id)}/deliveries`);
  return data.deliveries;
}

async function showDeliveries(id) {
  const list = await fetchDeliveries(id);
  if (current !== id) return list;
  const box = $('deliveries');
  if (!list.length) {
    box.replaceChildren(el('p', {}, 'No deliveries: this job has no callback URL and no hook matched it (or it is not finished yet).'));
    return list;
  }
  box.replaceChildren(...list.map((d) => delivery(id, d)));
  return list;
}

function delivery(jobID, d) {
  const what = d.kind === 'hook' ? `Hook ${shortID(d.hook_id)}` : 'Callback';
  const button = el('button', { type: 'button', class: 'redeliver', 'aria-label': `Redeliver ${what.toLowerCase()} ${d.id}`,
    onclick: () => redeliver(jobID, d, button) }, 'Redeliver');
  const rows = d.attempts.map((a) => el('tr', {},
    el('td', {}, a.attempt, a.redelivery ? ' (redelivery)' : ''),
    el('td', {}, time(a.at)),
    el('td', {}, a.status_code || '–'),
    el('td', {}, `${a.duration_ms ?? 0} ms`),
    el('td', {}, el('span', { class: `badge ${a.outcome}` }, a.outcome)),
    el('td', {}, a.response ? el('code', { class: 'snippet' }, a.response) : '–'),
    el('td', {}, a.error || '–'),
    el('td', {}, a.next_retry_at ? time(a.next_retry_at) : '–')));
  return el('article', { class: 'delivery', 'data-delivery': d.id },
    el('h4', {}, `${what} → `, el('code', {}, d.target || '(target unknown)'), ' ',
      el('span', { class: `badge ${d.status}` }, d.status)),
    el('p', { class: 'meta' }, 'webhook-id ', el('code', {}, d.id), `, event ${d.event}`),
    d.attempts.length
      ? el('table', {},
        el('caption', {}, `Attempts at the ${what.toLowerCase()} delivery`),
        el('thead', {}, el('tr', {}, ...['Attempt', 'Time', 'HTTP status', 'Duration', 'Outcome', 'Response', 'Error', 'Next retry']
          .map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, rows))
      : el('p', {}, 'Not attempted yet.'),
    el('p', {}, button));
}

async function redeliver(jobID, d, button) {
  const status = $('deliveries-status');
  button.disabled = true;
  try {
    await api('POST', `/v1/jobs/${encodeURIComponent(jobID)}/deliveries/${encodeURIComponent(d.id)}/redeliver`);
    status.textContent = 'Redelivery queued…';
    const before = d.attempts.length;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 750));
      if (current !== jobID) return;
      const now = (await fetchDeliveries(jobID)).find((x) => x.id === d.id);
      if (now && now.attempts.length > before) {
        const last = now.attempts[now.attempts.length - 1];
        await showDeliveries(jobID);
        status.textContent = `Redelivered: ${last.outcome}${last.status_code ? ` (HTTP ${last.status_code})` : ''}.`;
        return;
      }
    }
    status.textContent = 'Redelivery queued; it has not been attempted yet. Reload the job to see it.';
  } catch (err) {
    status.textContent = String(err);
  } finally {
    button.disabled = false;
  }
}
