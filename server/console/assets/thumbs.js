// Thumbnails of finished jobs for the jobs list: the compressed file,
// fetched once through the API (key in the header) when it is small enough,
// kept as a blob: URL for the rest of the session. Two fetches at a time,
// so a page of twenty jobs does not stall the list's own requests.
import { api } from './api.js';
import { el } from './format.js';

// maxBytes is the largest result fetched for a thumbnail.
export const maxBytes = 256 * 1024;
const parallel = 2;

const cache = new Map(); // job id → blob: URL, or '' when it could not be had
const waiting = []; // [job id, resolve] not started yet
const pending = new Map(); // job id → Promise<string>
let inFlight = 0;

export function reset() {
  for (const url of cache.values()) if (url) URL.revokeObjectURL(url);
  cache.clear();
  pending.clear();
  waiting.length = 0;
}

function pump() {
  while (inFlight < parallel && waiting.length) {
    const [id, resolve] = waiting.shift();
    inFlight++;
    api('GET', `/v1/jobs/${encodeURIComponent(id)}/file`, { raw: true })
      .then(({ data }) => URL.createObjectURL(data), () => '')
      .then((url) => {
        cache.set(id, url);
        pending.delete(id);
        resolve(url);
      })
      .finally(() => {
        inFlight--;
        pump();
      });
  }
}

function fetchThumb(id) {
  if (!pending.has(id)) {
    pending.set(id, new Promise((resolve) => waiting.push([id, resolve])));
    pump();
  }
  return pending.get(id);
}

// kindLabel is the short name of a MIME type ("image/webp" → "WEBP").
function kindLabel(mime) {
  return (mime || '').replace(/^image\//, '').toUpperCase() || '–';
}

// thumbnail is the preview box of a job: its result's image when the job
// completed with a small enough file, else the image type in letters.
export function thumbnail(job) {
  const r = job.result;
  const box = el('div', { class: 'thumb' }, kindLabel(r?.mime_type || job.input?.mime_type));
  if (job.status !== 'completed' || !r || !(r.compressed_size <= maxBytes) || !/^image\//.test(r.mime_type || '')) return box;
  const put = (url) => {
    if (url) box.replaceChildren(el('img', { src: url, alt: '', loading: 'lazy', decoding: 'async' }));
  };
  if (cache.has(job.id)) put(cache.get(job.id));
  else fetchThumb(job.id).then(put);
  return box;
}
