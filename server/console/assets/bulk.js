// Many files at once: dropping or choosing several images in Try it makes
// a batch (POST /v1/batches, up to 100 files per request) at once; a row
// per file shows its progress and saving, a line the total, and "Download
// all" fetches the batch's ZIP with the key in a header, never in a URL.
import { api, ApiError } from './api.js';
import { bytes, saving, el } from './format.js';
import { onSeveralFiles, transform } from './try.js';

const $ = (id) => document.getElementById(id);
const perBatch = 100;
let run = 0; // a newer drop stops the older run's polling
let archiveURL;

export function init() {
  onSeveralFiles(start);
  $('bulk-download').addEventListener('click', download);
}

async function start(files) {
  const mine = ++run;
  $('try-result').hidden = true;
  $('try-error').textContent = '';
  $('try-status').textContent = '';
  const body = $('bulk-rows');
  body.replaceChildren();
  const rows = files.map((f) => {
    const cells = { status: el('td', {}, 'uploading'), size: el('td', {}, bytes(f.size)), after: el('td', {}, '–'), dims: el('td', {}, '–'), saved: el('td', {}, '–') };
    body.append(el('tr', {}, el('td', {}, f.name), cells.status, cells.size, cells.after, cells.dims, cells.saved));
    return { file: f, cells, job: null };
  });
  $('bulk').hidden = false;
  $('bulk-error').textContent = '';
  $('bulk-download').hidden = true;
  const batches = [];
  for (let i = 0; i < rows.length; i += perBatch) {
    const part = rows.slice(i, i + perBatch);
    const form = new FormData();
    for (const [k, v] of Object.entries(transform())) form.append(k, v); // the batch's, for every file
    for (const r of part) form.append('file', r.file, r.file.name);
    try {
      const { data } = await api('POST', '/v1/batches', { body: form });
      batches.push({ id: data.id, rows: part });
      for (const r of part) r.cells.status.textContent = 'queued';
    } catch (err) {
      for (const r of part) r.cells.status.textContent = 'failed';
      $('bulk-error').textContent = err instanceof ApiError ? err.toString() : String(err);
    }
  }
  await follow(mine, batches, rows);
}

// follow polls each batch's jobs until every item has ended.
async function follow(mine, batches, rows) {
  let open = batches.slice();
  while (open.length && mine === run) {
    const still = [];
    for (const b of open) {
      try {
        const { data } = await api('GET', `/v1/batches/${encodeURIComponent(b.id)}/jobs?limit=100`);
        let ended = 0;
        for (const job of data.jobs) {
          const r = b.rows[job.index];
          if (!r) continue;
          r.job = job;
          r.cells.status.textContent = job.status === 'failed' && job.error ? `failed: ${job.error.code}` : job.status;
          if (job.result) {
            r.cells.after.textContent = bytes(job.result.compressed_size);
            if (job.result.width) r.cells.dims.textContent = `${job.result.width} × ${job.result.height}`;
            r.cells.saved.textContent = saving(job.result.original_size, job.result.compressed_size);
          }
          if (job.status === 'completed' || job.status === 'failed') ended++;
        }
        if (ended < b.rows.length) still.push(b);
      } catch (err) {
        $('bulk-error').textContent = String(err);
        still.push(b);
      }
    }
    total(rows);
    open = still;
    if (open.length) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  if (mine !== run) return;
  archiveURL = batches.length ? `/v1/batches/${encodeURIComponent(batches[0].id)}/archive` : '';
  $('bulk-download').hidden = batches.length !== 1 || !rows.some((r) => r.job && r.job.status === 'completed');
}

function total(rows) {
  let done = 0, before = 0, after = 0;
  for (const r of rows) {
    if (!r.job || (r.job.status !== 'completed' && r.job.status !== 'failed')) continue;
    done++;
    if (r.job.result) {
      before += r.job.result.original_size;
      after += r.job.result.compressed_size;
    }
  }
  $('bulk-total').textContent = `${done} of ${rows.length} done; ${bytes(before)} → ${bytes(after)}, saved ${saving(before, after)}`;
}

// download fetches the ZIP with the key and hands it to the browser.
async function download() {
  if (!archiveURL) return;
  try {
    const { data } = await api('GET', archiveURL, { raw: true });
    const a = el('a', { href: URL.createObjectURL(data), download: 'imgflow-batch.zip' });
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 10000);
  } catch (err) {
    $('bulk-error').textContent = String(err);
  }
}
