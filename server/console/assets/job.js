// One job: its details (the whole id with a copy button, input, result,
// error, callback, metadata) and its deliveries with every attempt and a
// Redeliver button. While the job is unfinished the page re-reads it every
// 2 s (paused while the tab is hidden).
import { api } from './api.js';
import { bytes, saving, time, el, definitionList, idTail, idCode, inputName, inputKinds, timeElement } from './format.js';

const $ = (id) => document.getElementById(id);
const pollEvery = 2000;
let current = ''; // id of the job shown
let timer = 0;

export function init() {
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && current && timer === -1) poll(current);
  });
}

export function reset() {
  close();
  $('job-detail').replaceChildren();
  $('deliveries').replaceChildren();
}

export function close() {
  current = '';
  clearTimeout(timer);
  timer = 0;
}

export async function openJob(id) {
  clearTimeout(timer);
  current = id;
  $('job-title').textContent = `Job ${idTail(id)}`;
  $('job-id-full').textContent = id;
  $('job-id-line').hidden = false;
  $('job-error').textContent = '';
  $('job-detail').replaceChildren();
  $('deliveries').replaceChildren();
  $('deliveries-status').textContent = '';
  await poll(id);
}

async function poll(id) {
  timer = 0;
  try {
    const { data: job } = await api('GET', `/v1/jobs/${encodeURIComponent(id)}`);
    if (current !== id) return;
    $('job-title').textContent = `Job ${idTail(id)}: ${inputName(job.input)}`;
    $('job-detail').replaceChildren(...detail(job));
    await showDeliveries(id);
    if (current !== id || ['completed', 'failed'].includes(job.status)) return;
    if (document.hidden) {
      timer = -1; // resumed by visibilitychange
      return;
    }
    timer = setTimeout(() => poll(id), pollEvery);
  } catch (err) {
    if (current === id) $('job-error').textContent = String(err);
  }
}

function when(iso) {
  return iso ? el('span', {}, time(iso), ' (', timeElement(iso), ')') : null;
}

function detail(job) {
  const out = [definitionList([
    ['Status', el('span', { class: `badge ${job.status}` }, job.status)],
    ['Created', when(job.created_at)],
    ['Started', when(job.started_at)],
    ['Finished', when(job.finished_at)],
    ['Worker attempts', job.attempts],
  ])];
  const i = job.input || {};
  out.push(el('h3', {}, 'Input'), definitionList([
    ['Kind', inputKinds[i.kind] || i.kind], ['URL', i.url && el('code', {}, i.url)], ['File name', i.filename],
    ['Size', i.size && bytes(i.size)], ['Type', i.mime_type],
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
      ['Last error', c.last_error], ['Delivered', when(c.delivered_at)],
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
  // Short, distinct accessible names: "Redeliver the callback", "Redeliver
  // to hook …3f9a0c1d" (the webhook id is in the text, not read out twice).
  const what = d.kind === 'hook' ? `Hook ${idTail(d.hook_id)}` : 'Callback';
  const name = d.kind === 'hook' ? `Redeliver to hook ${idTail(d.hook_id)}` : 'Redeliver the callback';
  const button = el('button', { type: 'button', class: 'redeliver secondary', 'aria-label': name,
    onclick: () => redeliver(jobID, d, button) }, 'Redeliver');
  const rows = d.attempts.map((a) => el('tr', {},
    el('td', {}, a.attempt, a.redelivery ? ' (redelivery)' : ''),
    el('td', {}, time(a.at)),
    el('td', {}, a.status_code || '–'),
    el('td', { class: 'nowrap' }, `${a.duration_ms ?? 0} ms`),
    el('td', {}, el('span', { class: `badge ${a.outcome}` }, a.outcome)),
    el('td', {}, a.response ? el('code', { class: 'snippet' }, a.response) : '–'),
    el('td', {}, a.error || '–'),
    el('td', {}, a.next_retry_at ? time(a.next_retry_at) : '–')));
  const caption = `Attempts at the ${what.toLowerCase()} delivery`;
  return el('article', { class: 'delivery', 'data-delivery': d.id },
    el('h4', {}, `${what} → `, el('code', {}, d.target || '(target unknown)'), ' ',
      el('span', { class: `badge ${d.status}` }, d.status)),
    el('p', { class: 'meta' }, 'webhook-id ', el('code', {}, d.id), `, event ${d.event}`),
    d.attempts.length
      ? el('div', { class: 'table-scroll', role: 'region', 'aria-label': caption, tabindex: '0' },
        el('table', {},
          el('caption', {}, caption),
          el('thead', {}, el('tr', {}, ...['Attempt', 'Time', 'HTTP status', 'Duration', 'Outcome', 'Response', 'Error', 'Next retry']
            .map((h) => el('th', { scope: 'col' }, h)))),
          el('tbody', {}, rows)))
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
