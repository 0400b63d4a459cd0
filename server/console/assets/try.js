// Try it: compress one image (a file, dropped or picked, or an image URL)
// with ?wait, then show before and after, the sizes, the saving and a
// download link. Previews are blob: URLs made in the page; the compressed
// file is fetched with the key in a header, never through a URL carrying it.
import { api, ApiError } from './api.js';
import { bytes, saving } from './format.js';

const $ = (id) => document.getElementById(id);
let account;
let urls = []; // object URLs to revoke on the next run

export function init(acct) {
  account = acct;
  $('try-form').addEventListener('submit', submit);
  const zone = $('drop-zone');
  for (const type of ['dragenter', 'dragover']) {
    zone.addEventListener(type, (e) => {
      e.preventDefault();
      zone.classList.add('over');
    });
  }
  for (const type of ['dragleave', 'drop']) {
    zone.addEventListener(type, () => zone.classList.remove('over'));
  }
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) {
      $('try-file').files = e.dataTransfer.files;
      $('try-status').textContent = `Ready: ${e.dataTransfer.files[0].name}`;
    }
  });
}

export function open() {}

export function reset() {
  clear();
  $('try-form').reset();
  $('try-status').textContent = '';
}

function clear() {
  for (const u of urls) URL.revokeObjectURL(u);
  urls = [];
  $('try-result').hidden = true;
  $('try-error').textContent = '';
}

function objectURL(blob) {
  const u = URL.createObjectURL(blob);
  urls.push(u);
  return u;
}

// request builds the job request from the form, or says what is missing.
function request() {
  const file = $('try-file').files[0];
  const imageURL = $('try-url').value.trim();
  const callbackURL = $('try-callback').value.trim();
  const metadata = $('try-metadata').value.trim();
  if (!file && !imageURL) throw new ApiError(0, 'invalid_input', 'Choose an image file or enter an image URL.');
  if (file && imageURL) throw new ApiError(0, 'invalid_input', 'Give an image file or an image URL, not both.');
  if (metadata) {
    try {
      JSON.parse(metadata);
    } catch {
      throw new ApiError(0, 'invalid_input', 'Metadata must be a JSON object, such as {"record_id":"rec_1"}.');
    }
  }
  if (file) {
    const form = new FormData();
    form.append('file', file, file.name);
    if (callbackURL) form.append('callback_url', callbackURL);
    if (metadata) form.append('metadata', metadata);
    return { body: form, file };
  }
  const body = { image_url: imageURL };
  if (callbackURL) body.callback_url = callbackURL;
  if (metadata) body.metadata = JSON.parse(metadata);
  return { body, imageURL };
}

async function submit(event) {
  event.preventDefault();
  clear();
  const button = $('try-submit');
  const status = $('try-status');
  let req;
  try {
    req = request();
  } catch (err) {
    $('try-error').textContent = String(err);
    return;
  }
  button.disabled = true;
  status.textContent = 'Compressing…';
  try {
    let { data: job } = await api('POST', '/v1/jobs?wait=25', { body: req.body });
    // Not finished within the wait: poll until it is.
    for (let i = 0; i < 120 && !['completed', 'failed'].includes(job.status); i++) {
      status.textContent = `Job ${job.id.slice(0, 8)} is ${job.status}…`;
      await new Promise((r) => setTimeout(r, 1000));
      ({ data: job } = await api('GET', `/v1/jobs/${encodeURIComponent(job.id)}`));
    }
    await show(job, req);
  } catch (err) {
    status.textContent = '';
    $('try-error').textContent = String(err);
  } finally {
    button.disabled = false;
  }
}

async function show(job, req) {
  const status = $('try-status');
  $('try-job-link').href = `#/jobs/${encodeURIComponent(job.id)}`;
  $('try-job-id').textContent = job.id.slice(0, 8);
  if (job.status === 'failed') {
    status.textContent = `Job ${job.id.slice(0, 8)} failed.`;
    const e = job.error || {};
    $('try-error').textContent = `${e.code}: ${e.message}`;
    return;
  }
  if (job.status !== 'completed') {
    status.textContent = `Job ${job.id.slice(0, 8)} is still ${job.status}; see it under Jobs.`;
    return;
  }
  const r = job.result;
  const { data: blob } = await api('GET', `/v1/jobs/${encodeURIComponent(job.id)}/file`, { raw: true });
  const after = objectURL(blob);
  $('after-img').src = after;
  $('after-size').textContent = bytes(r.compressed_size);
  const before = $('before-img');
  if (req.file) {
    before.src = objectURL(req.file);
    before.hidden = false;
  } else {
    // A URL elsewhere is not loaded into the page (no third-party requests).
    before.removeAttribute('src');
    before.hidden = true;
  }
  $('before-size').textContent = bytes(r.original_size) + (req.imageURL ? ` (${req.imageURL})` : '');
  $('try-saving').textContent = saving(r.original_size, r.compressed_size);
  const link = $('try-download');
  link.href = after;
  link.download = r.filename || 'compressed';
  $('try-result').hidden = false;
  status.textContent = `Done: ${bytes(r.original_size)} → ${bytes(r.compressed_size)}, saving ${saving(r.original_size, r.compressed_size)}.`;
  account.credits(r.credits_remaining);
}
