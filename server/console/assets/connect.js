// Connect: copy-ready snippets for curl and each automation platform, with
// this server's public URL, and the definition files to download. The
// public URL comes from /v1/definitions (rendered for IMGFLOW_PUBLIC_URL);
// the key is never written into a snippet.
import { api } from './api.js';
import { el, copy } from './format.js';

const $ = (id) => document.getElementById(id);
let loaded = false;
let webhookSecret = '';

export function init() {}

export function setAccount(acct) {
  webhookSecret = acct.webhook_secret || '';
  loaded = false;
}

export function copyFrom(button) {
  const target = $(button.dataset.copy);
  if (!button.dataset.label) button.dataset.label = button.textContent;
  copy(target.value ?? target.textContent, button);
}

export async function open() {
  if (loaded) return;
  let base = location.origin;
  let files = [];
  try {
    const { data } = await api('GET', '/v1/definitions', { key: '' });
    files = data.files || [];
    if (files.length) base = files[0].url.replace(/\/v1\/definitions\/.*$/, '');
  } catch {
    // definitions not served: the page's origin stands in
  }
  $('public-url').textContent = base;
  $('snippets').replaceChildren(...snippets(base, files).map(snippet));
  $('definition-files').replaceChildren(...files.map((f) =>
    el('li', {}, el('a', { href: f.url, download: f.name }, `${f.platform}/${f.name}`))));
  loaded = true;
}

let counter = 0;

function snippet({ title, text, code }) {
  const id = `snippet-${++counter}`;
  return el('section', { class: 'snippet-box', 'aria-labelledby': `${id}-title` },
    el('h3', { id: `${id}-title` }, title),
    text ? el('p', {}, text) : null,
    el('pre', {}, el('code', { id }, code)),
    el('button', { type: 'button', 'data-copy': id, 'aria-label': `Copy the ${title} snippet` }, 'Copy'));
}

function link(files, platform) {
  return files.filter((f) => f.platform === platform).map((f) => f.url).join('\n');
}

function snippets(base, files) {
  const out = [
    { title: 'curl', text: 'Compress a local file and wait for the result (up to 25 s):',
      code: `curl -s -X POST '${base}/v1/jobs?wait=20' -H "X-API-Key: $IMGFLOW_KEY" -F file=@photo.jpg\n\n` +
        `curl -s -X POST '${base}/v1/jobs?wait=20' -H "X-API-Key: $IMGFLOW_KEY" \\\n` +
        `  -H 'Content-Type: application/json' -d '{"image_url": "https://images.example.com/photo.jpg"}'` },
    { title: 'n8n', text: 'Install the community node n8n-nodes-imgflow (Settings → Community Nodes), create an "Imgflow API" credential with your key and this Base URL; or import a ready workflow template:',
      code: `Node package: n8n-nodes-imgflow\nBase URL: ${base}\n\nTemplates:\n${link(files, 'n8n') || base + '/v1/definitions/n8n'}` },
    { title: 'Zapier', text: 'The app definition, for zapier-platform (zapier push); connect with your key:',
      code: link(files, 'zapier') || `${base}/v1/definitions/zapier` },
    { title: 'Make', text: 'Custom app files: paste each into the matching section of a new custom app:',
      code: link(files, 'make') || `${base}/v1/definitions/make` },
    { title: 'Power Automate', text: 'Custom connector: import the swagger file ("Import an OpenAPI file"), with apiProperties.json beside it (paconn):',
      code: link(files, 'powerautomate') || `${base}/v1/definitions/powerautomate` },
    { title: 'Any HTTP client (OpenAPI)', text: 'Pipedream, Activepieces and generic HTTP tools import the OpenAPI document:',
      code: `${base}/openapi.json` },
  ];
  if (webhookSecret) {
    out.push({ title: 'Callback signing secret', text: 'Callbacks (callback_url) are signed with this secret (Standard Webhooks); hooks have their own.',
      code: webhookSecret });
  }
  return out;
}
