// Jobs: the key's jobs newest first, with file name, input type, a
// thumbnail, the whole id (its distinguishing end in bold) and a copy
// button, status, saving and relative time. Search by id, filter by
// status, "Load more" while there is a next page. The list refreshes
// itself while its view is open and the tab visible: one request for the
// first page at most every 2 s while a job is unfinished, every 4 s
// otherwise; new jobs are put in place and changed ones updated, so no
// row is ever listed twice.
import { api } from './api.js';
import { bytes, saving, el, idCode, idTail, inputName, inputKinds, copyButton, timeElement, refreshTimes } from './format.js';
import * as thumbs from './thumbs.js';

const $ = (id) => document.getElementById(id);
const pageSize = 20;
const busyEvery = 2000; // ms between refreshes while a job is unfinished
const idleEvery = 4000;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const rows = new Map(); // job id → { tr, job }
let cursor = ''; // of the next page after the last one loaded
let generation = 0; // bumped by a fresh load: older answers are dropped
let open = false; // the list view is shown
let timer = 0;
let lastRequest = 0;

export function init() {
  $('jobs-status').addEventListener('change', () => fresh());
  $('jobs-filter').addEventListener('submit', (e) => {
    e.preventDefault();
    fresh();
  });
  $('jobs-search').addEventListener('input', applySearch);
  $('jobs-search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    lookUp();
  });
  $('jobs-more').addEventListener('click', more);
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) clearTimeout(timer);
    else schedule();
  });
}

export function reset() {
  close();
  generation++;
  rows.clear();
  cursor = '';
  $('jobs-table').tBodies[0].replaceChildren();
  $('jobs-search').value = '';
  thumbs.reset();
}

export function openList() {
  open = true;
  $('jobs-refresh').textContent = '(updates itself)';
  fresh();
}

export function close() {
  open = false;
  clearTimeout(timer);
}

async function fetchPage(after) {
  const q = new URLSearchParams({ limit: String(pageSize) });
  const status = $('jobs-status').value;
  if (status) q.set('status', status);
  if (after) q.set('cursor', after);
  lastRequest = Date.now();
  const { data } = await api('GET', `/v1/jobs?${q}`);
  return data;
}

// guarded runs one list request; an error is shown, a stale answer dropped.
async function guarded(fn) {
  const gen = generation;
  $('jobs-error').textContent = '';
  try {
    await fn(() => gen === generation);
  } catch (err) {
    if (gen === generation) $('jobs-error').textContent = String(err);
  }
  if (gen === generation) shown();
}

function fresh() {
  generation++;
  clearTimeout(timer);
  return guarded(async (current) => {
    const page = await fetchPage('');
    if (!current()) return;
    replace(page);
  });
}

async function more() {
  if (!cursor) return;
  const button = $('jobs-more');
  button.disabled = true;
  await guarded(async (current) => {
    const page = await fetchPage(cursor);
    if (!current()) return;
    for (const job of page.jobs) if (!rows.has(job.id)) add(job, null);
    cursor = page.next_cursor || '';
  });
  button.disabled = false;
}

async function refresh() {
  await guarded(async (current) => {
    const page = await fetchPage('');
    if (current()) merge(page);
  });
}

function replace(page) {
  rows.clear();
  $('jobs-table').tBodies[0].replaceChildren();
  for (const job of page.jobs) add(job, null);
  cursor = page.next_cursor || '';
}

// merge folds a fresh first page into the list: new jobs go in id order
// (ids are time-ordered), changed ones are redrawn, and those gone from
// the range the page covers (deleted, or out of the status filter) leave.
function merge(page) {
  if (rows.size && page.next_cursor && !page.jobs.some((j) => rows.has(j.id))) {
    replace(page); // more new jobs than a page: start over from the top
    return;
  }
  const ids = new Set(page.jobs.map((j) => j.id));
  const oldest = page.next_cursor ? page.jobs[page.jobs.length - 1].id : '';
  for (const [id, r] of rows) {
    if (id >= oldest && !ids.has(id) && !r.pinned) {
      r.tr.remove();
      rows.delete(id);
    }
  }
  for (const job of page.jobs) {
    const known = rows.get(job.id);
    if (!known) add(job, null);
    else if (known.job.status !== job.status || known.job.updated_at !== job.updated_at) update(known, job);
  }
  if (!rows.size) cursor = '';
}

// add puts a job's row in id order, newest first.
function add(job, pinned) {
  const tr = row(job);
  const tbody = $('jobs-table').tBodies[0];
  let before = null;
  for (const [id, r] of rows) {
    if (id < job.id && (!before || id > before.id)) before = { id, tr: r.tr };
  }
  tbody.insertBefore(tr, before ? before.tr : null);
  rows.set(job.id, { tr, job, pinned: Boolean(pinned) });
}

function update(known, job) {
  const tr = row(job);
  known.tr.replaceWith(tr);
  known.tr = tr;
  known.job = job;
}

// shown updates what depends on the rows: the empty note, Load more, the
// search, the times; and plans the next refresh.
function shown() {
  const tbody = $('jobs-table').tBodies[0];
  $('jobs-more').hidden = !cursor;
  $('jobs-empty').hidden = rows.size > 0;
  applySearch();
  refreshTimes(tbody);
  schedule();
}

function schedule() {
  clearTimeout(timer);
  if (!open || document.hidden) return;
  const busy = [...rows.values()].some((r) => !['completed', 'failed'].includes(r.job.status));
  const wait = Math.max(0, lastRequest + (busy ? busyEvery : idleEvery) - Date.now());
  timer = setTimeout(() => {
    if (open && !document.hidden) refresh();
  }, wait);
}

function applySearch() {
  const q = $('jobs-search').value.trim().toLowerCase();
  let matches = 0;
  for (const [id, r] of rows) {
    r.tr.hidden = q !== '' && !id.includes(q);
    if (!r.tr.hidden) matches++;
  }
  const note = $('jobs-search-status');
  if (!q) note.textContent = '';
  else if (matches) note.textContent = `${matches} listed job${matches === 1 ? '' : 's'} match “${q}”.`;
  else if (uuid.test(q)) note.textContent = `No listed job has id ${q}: press Find to look it up.`;
  else note.textContent = `No listed job matches “${q}”; enter the whole id and press Find to look it up.`;
}

// lookUp finds a whole id the list has not loaded, through the API.
async function lookUp() {
  const q = $('jobs-search').value.trim().toLowerCase();
  if (!uuid.test(q) || rows.has(q)) {
    applySearch();
    return;
  }
  try {
    const { data: job } = await api('GET', `/v1/jobs/${encodeURIComponent(q)}`);
    const status = $('jobs-status').value;
    if (status && job.status !== status) {
      $('jobs-search-status').textContent = `Job ${q} is ${job.status}: choose the status "All" to see it.`;
      return;
    }
    add(job, true);
    applySearch();
  } catch (err) {
    $('jobs-search-status').textContent = err.status === 404 ? `No job of yours has id ${q}.` : String(err);
  }
}

function sizes(job) {
  const r = job.result || {};
  return { original: r.original_size ?? job.input?.size, compressed: r.compressed_size };
}

function row(job) {
  const s = sizes(job);
  const input = job.input || {};
  const name = inputName(input);
  const href = `#/jobs/${encodeURIComponent(job.id)}`;
  return el('tr', { 'data-job': job.id },
    el('td', { class: 'thumb-cell' }, thumbs.thumbnail(job)),
    el('td', { class: 'file-cell' },
      el('div', { class: 'file-name', title: input.url || name }, name),
      el('div', { class: 'meta' }, [inputKinds[input.kind] || input.kind, s.original !== undefined ? bytes(s.original) : '']
        .filter(Boolean).join(' · '))),
    el('td', { class: 'id-cell' },
      el('div', { class: 'job-id' },
        el('a', { href }, el('span', { class: 'visually-hidden' }, 'Job '), idCode(job.id)),
        copyButton(job.id, `Copy the id of job ${idTail(job.id)}`))),
    el('td', { class: 'status-cell' }, el('span', { class: `badge ${job.status}` }, job.status)),
    el('td', { class: 'saving-cell' },
      s.compressed !== undefined ? el('strong', {}, saving(s.original, s.compressed)) : '–',
      s.compressed !== undefined ? el('div', { class: 'meta nowrap' }, `${bytes(s.original)} → ${bytes(s.compressed)}`) : null),
    el('td', { class: 'created-cell' }, timeElement(job.created_at)));
}
