// Try it: compress one image, a file (dropped or chosen: it starts at once)
// or an image URL, with ?wait, then show before and after (a slider over
// the two images), both sizes and dimensions, the saving and a download
// link. Previews are blob: URLs made in the page; the compressed file is
// fetched with the key in a header, never through a URL carrying it.
//
// run(request) is the one path from a request to a shown result, so other
// ways to start (several files at once) can build their own requests.
import { api, ApiError } from './api.js';
import { bytes, saving, idTail, inputName } from './format.js';

const $ = (id) => document.getElementById(id);
let account;
let urls = []; // object URLs to revoke on the next run
let running = false;

export function init(acct) {
  account = acct;
  $('try-form').addEventListener('submit', (e) => {
    e.preventDefault();
    startURL();
  });
  $('try-file').addEventListener('change', () => startFiles($('try-file').files));
  // Space opens a file input's picker; Enter does too here, as on a button.
  $('try-file').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      e.target.click();
    }
  });
  const zone = $('drop-zone');
  for (const type of ['dragenter', 'dragover']) {
    zone.addEventListener(type, (e) => {
      e.preventDefault();
      zone.classList.add('over');
    });
  }
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    if (e.dataTransfer && e.dataTransfer.files.length) startFiles(e.dataTransfer.files);
  });
  $('compare-range').addEventListener('input', (e) => {
    $('compare').style.setProperty('--pos', `${e.target.value}%`);
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

// options are the callback URL and metadata of the "More options" part.
function options() {
  const callbackURL = $('try-callback').value.trim();
  const raw = $('try-metadata').value.trim();
  let metadata;
  if (raw) {
    try {
      metadata = JSON.parse(raw);
    } catch {
      metadata = undefined;
    }
    if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
      throw new ApiError(0, 'invalid_input', 'Metadata must be a JSON object, such as {"record_id":"rec_1"}.');
    }
  }
  return { callbackURL, metadata };
}

// transform is the options' choice as the API's flat fields (resize,
// resize_method, resize_enlarge, convert, background, preserve,
// target_max_bytes, target_min_score): empty
// when all are left as they are.
export function transform() {
  const out = {};
  const width = $('try-width').value.trim();
  const height = $('try-height').value.trim();
  if (width || height) {
    out.resize = `${width}x${height}`;
    const method = $('try-method').value;
    if (method) out.resize_method = method; // else the API's: scale for one side, fit for two
    if ($('try-enlarge').checked) out.resize_enlarge = 'true';
  }
  const format = $('try-format').value;
  if (format) out.convert = format;
  const background = $('try-background').value;
  if (format === 'jpeg' && background && background.toLowerCase() !== '#ffffff') out.background = background;
  const keep = [...document.querySelectorAll('#try-preserve input:checked')].map((c) => c.value);
  if (keep.length) out.preserve = keep.join(',');
  const maxSize = $('try-max-size').value.trim();
  if (maxSize) out.target_max_bytes = maxSize; // "100KB", "1.5MB" or bytes: the API reads the unit
  const minScore = $('try-min-score').value.trim();
  if (maxSize && minScore) out.target_min_score = minScore; // a floor needs a size
  return out;
}

// fileRequest is the multipart request of one file.
export function fileRequest(file) {
  const { callbackURL, metadata } = options();
  const form = new FormData();
  for (const [k, v] of Object.entries(transform())) form.append(k, v);
  form.append('file', file, file.name);
  if (callbackURL) form.append('callback_url', callbackURL);
  if (metadata) form.append('metadata', JSON.stringify(metadata));
  return { body: form, file, name: file.name };
}

function urlRequest(imageURL) {
  const { callbackURL, metadata } = options();
  const body = { image_url: imageURL, ...transform() };
  if (callbackURL) body.callback_url = callbackURL;
  if (metadata) body.metadata = metadata;
  return { body, imageURL, name: inputName({ url: imageURL }) };
}

// several, when set (bulk.js), takes two files or more: they make a batch.
let several = null;

export function onSeveralFiles(fn) {
  several = fn;
}

function startFiles(files) {
  const list = files ? [...files] : [];
  $('try-file').value = ''; // choosing the same file again starts again
  if (list.length > 1 && several) {
    several(list);
    return;
  }
  const file = list[0];
  if (!file) return;
  attempt(() => fileRequest(file));
}

function startURL() {
  const imageURL = $('try-url').value.trim();
  attempt(() => {
    if (!imageURL) throw new ApiError(0, 'invalid_input', 'Enter an image URL, or choose or drop an image file above.');
    return urlRequest(imageURL);
  });
}

async function attempt(build) {
  if (running) return;
  clear();
  let req;
  try {
    req = build();
  } catch (err) {
    $('try-error').textContent = String(err);
    return;
  }
  await run(req);
}

// run creates the job, waits for it (polling past the wait) and shows it.
export async function run(req) {
  const status = $('try-status');
  running = true;
  $('try-submit').disabled = true;
  status.textContent = `Compressing ${req.name}…`;
  try {
    let { data: job } = await api('POST', '/v1/jobs?wait=25', { body: req.body });
    for (let i = 0; i < 120 && !['completed', 'failed'].includes(job.status); i++) {
      status.textContent = `Job ${idTail(job.id)} is ${job.status}…`;
      await new Promise((r) => setTimeout(r, 1000));
      ({ data: job } = await api('GET', `/v1/jobs/${encodeURIComponent(job.id)}`));
    }
    await show(job, req);
  } catch (err) {
    status.textContent = '';
    $('try-error').textContent = String(err);
  } finally {
    running = false;
    $('try-submit').disabled = false;
  }
}

// loaded resolves once img has decoded src (or failed to).
function loaded(img, src) {
  return new Promise((resolve) => {
    img.onload = () => resolve(true);
    img.onerror = () => resolve(false);
    img.src = src;
  });
}

function dims(img) {
  return img.naturalWidth ? `${img.naturalWidth} × ${img.naturalHeight} px` : '';
}

async function show(job, req) {
  const status = $('try-status');
  $('try-job-link').href = `#/jobs/${encodeURIComponent(job.id)}`;
  $('try-job-id').textContent = idTail(job.id);
  if (job.status === 'failed') {
    status.textContent = `Job ${idTail(job.id)} failed.`;
    const e = job.error || {};
    $('try-error').textContent = `${e.code}: ${e.message}`;
    return;
  }
  if (job.status !== 'completed') {
    status.textContent = `Job ${idTail(job.id)} is still ${job.status}; see it under Jobs.`;
    return;
  }
  const r = job.result;
  const { data: blob } = await api('GET', `/v1/jobs/${encodeURIComponent(job.id)}/file`, { raw: true });
  const after = objectURL(blob);
  const before = $('before-img');
  const compare = $('compare');
  compare.style.setProperty('--pos', '50%');
  $('compare-range').value = '50';
  const shown = [loaded($('after-img'), after)];
  if (req.file) {
    shown.push(loaded(before, objectURL(req.file)));
  } else {
    // A URL elsewhere is not loaded into the page (no third-party requests).
    before.removeAttribute('src');
  }
  // A file this browser cannot show (HEIC, in most) has no "before" image:
  // the result is shown alone, and the page says why.
  const [, beforeShown] = await Promise.all(shown);
  const preview = Boolean(req.file && beforeShown);
  if (req.file && !preview) before.removeAttribute('src');
  compare.classList.toggle('single', !preview);
  before.hidden = !preview;
  $('compare-tags').hidden = !preview;
  $('compare-range-row').hidden = !preview;
  $('try-file-name').textContent = req.name;
  $('before-size').textContent = bytes(r.original_size);
  let beforeDims = '(the image at the URL, not loaded here)';
  if (preview) beforeDims = dims(before);
  else if (req.file) beforeDims = '(no preview: this browser cannot show this image type)';
  $('before-dims').textContent = beforeDims;
  $('after-size').textContent = bytes(r.compressed_size);
  $('after-dims').textContent = r.width ? `${r.width} × ${r.height} px` : dims($('after-img'));
  $('try-saving').textContent = saving(r.original_size, r.compressed_size);
  const link = $('try-download');
  link.href = after;
  link.download = r.filename || 'compressed';
  $('try-result').hidden = false;
  status.textContent = `Done: ${bytes(r.original_size)} → ${bytes(r.compressed_size)}, saving ${saving(r.original_size, r.compressed_size)}.`;
  // The result in view, and focus on it for keyboard and screen readers.
  $('try-result-title').focus({ preventScroll: true });
  $('try-result').scrollIntoView({ block: 'start' });
  if (r.credits_remaining !== undefined && r.credits_remaining !== null) {
    account.credits(r.credits_remaining);
  } else {
    // A repeat whose balance could not be read reports none: ask the account.
    api('GET', '/v1/account')
      .then(({ data }) => account.credits(data.credits_remaining))
      .catch(() => {});
  }
}
