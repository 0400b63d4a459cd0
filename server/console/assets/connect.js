// Connect: a tab per platform (curl, n8n, Zapier, Make, Power Automate,
// OpenAPI) with its install steps, copy-ready snippets written with this
// server's public URL, and its definition files to download. The public
// URL comes from /v1/definitions (rendered for IMGFLOW_PUBLIC_URL); the key
// is never written into a snippet. Tabs follow the WAI-ARIA tabs pattern
// (arrow keys, Home and End move between them). The Callbacks tab shows
// the key's callback signing secret and rotates it
// (POST /v1/account/rotate-secret): the new one is shown once, and both
// sign during the overlap.
import { api } from './api.js';
import { el, copy, time } from './format.js';

const $ = (id) => document.getElementById(id);
let loaded = false;
let webhookSecret = '';
let selected = 'curl';

export function init() {
  $('connect-tabs').addEventListener('keydown', keyNav);
}

export function setAccount(acct) {
  webhookSecret = acct.webhook_secret || '';
  loaded = false;
}

export function reset() {
  webhookSecret = '';
  loaded = false;
  $('connect-tabs').replaceChildren();
  $('connect-panels').replaceChildren();
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
  const list = platforms(base, files);
  $('connect-tabs').replaceChildren(...list.map((p) => el('button', {
    type: 'button', role: 'tab', id: `tab-${p.id}`, 'aria-controls': `panel-${p.id}`,
    onclick: () => select(p.id, false),
  }, p.title)));
  $('connect-panels').replaceChildren(...list.map(panel));
  if (!list.some((p) => p.id === selected)) selected = list[0].id;
  select(selected, false);
  loaded = true;
}

function select(id, focus) {
  selected = id;
  for (const tab of $('connect-tabs').querySelectorAll('[role="tab"]')) {
    const on = tab.id === `tab-${id}`;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    if (on && focus) tab.focus();
  }
  for (const p of $('connect-panels').querySelectorAll('[role="tabpanel"]')) p.hidden = p.id !== `panel-${id}`;
}

function keyNav(e) {
  const tabs = [...$('connect-tabs').querySelectorAll('[role="tab"]')];
  const i = tabs.indexOf(document.activeElement);
  if (i < 0) return;
  const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
  if (next === undefined) return;
  e.preventDefault();
  select(tabs[(next + tabs.length) % tabs.length].id.slice('tab-'.length), true);
}

let counter = 0;

function snippet({ title, code, id = `snippet-${++counter}` }) {
  return el('div', { class: 'snippet-box' },
    el('pre', {}, el('code', { id }, code)),
    el('button', { type: 'button', class: 'secondary small', 'data-copy': id, 'aria-label': `Copy the ${title} snippet` }, 'Copy'));
}

function panel(p) {
  const mine = p.files || [];
  return el('section', { role: 'tabpanel', id: `panel-${p.id}`, 'aria-labelledby': `tab-${p.id}`, tabindex: '0', hidden: true },
    el('h3', {}, p.title),
    el('ol', {}, p.steps.map((s) => el('li', {}, s))),
    p.snippets.map(snippet),
    p.id === 'callbacks' ? rotation() : null,
    mine.length ? [el('h4', {}, 'Downloads'),
      el('ul', {}, mine.map((f) => el('li', {}, el('a', { href: f.url, download: f.name }, `${f.platform}/${f.name}`))))] : null);
}

function platforms(base, files) {
  const of = (platform) => files.filter((f) => f.platform === platform);
  const links = (platform, fallback) => of(platform).map((f) => f.url).join('\n') || `${base}/v1/definitions/${fallback}`;
  const out = [
    { id: 'curl', title: 'curl', steps: ['Set IMGFLOW_KEY to your API key.', 'Send a file or an image URL; ?wait=20 answers with the finished job (else poll its Location).'],
      snippets: [
        { title: 'curl upload', code: `curl -s -X POST '${base}/v1/jobs?wait=20' -H "X-API-Key: $IMGFLOW_KEY" -F file=@photo.jpg` },
        { title: 'curl URL', code: `curl -s -X POST '${base}/v1/jobs?wait=20' -H "X-API-Key: $IMGFLOW_KEY" \\\n` +
          `  -H 'Content-Type: application/json' -d '{"image_url": "https://images.example.com/photo.jpg"}'` },
      ] },
    { id: 'n8n', title: 'n8n', files: of('n8n'),
      steps: ['In n8n, Settings → Community Nodes → Install, and enter the package name below.',
        'Create an "Imgflow API" credential with your key and this Base URL.',
        'Or import a ready workflow template (Workflows → Import from URL or file).'],
      snippets: [{ title: 'n8n', code: `Node package: n8n-nodes-imgflow\nBase URL: ${base}\n\nTemplates:\n${links('n8n', 'n8n')}` }] },
    { id: 'zapier', title: 'Zapier', files: of('zapier'),
      steps: ['Download the app definition below into a zapier-platform project.', 'Run zapier push, then connect with your key.'],
      snippets: [{ title: 'Zapier', code: links('zapier', 'zapier') }] },
    { id: 'make', title: 'Make', files: of('make'),
      steps: ['Create a custom app in Make.', 'Paste each file below into the matching section (base, connection, modules).', 'Connect with your key.'],
      snippets: [{ title: 'Make', code: links('make', 'make') }] },
    { id: 'powerautomate', title: 'Power Automate', files: of('powerautomate'),
      steps: ['New custom connector → Import an OpenAPI file, with the swagger file below (or paconn create with apiProperties.json beside it).',
        'Create a connection with your key.'],
      snippets: [{ title: 'Power Automate', code: links('powerautomate', 'powerautomate') }] },
    { id: 'openapi', title: 'OpenAPI', files: of('openapi'),
      steps: ['Pipedream, Activepieces and generic HTTP tools import the OpenAPI document.', 'Send your key in the X-API-Key header.'],
      snippets: [{ title: 'OpenAPI', code: `${base}/openapi.json` }] },
  ];
  if (webhookSecret) {
    out.push({ id: 'callbacks', title: 'Callbacks',
      steps: ['Callbacks (callback_url) are signed with this secret (Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature); hooks have their own.'],
      snippets: [{ title: 'Callback signing secret', code: webhookSecret, id: 'callback-secret-code' }] });
  }
  return out;
}

// rotation is the Callbacks tab's "Rotate the callback secret": asked
// first, then the new secret shown once (focused, to copy) with how long
// the previous one still signs.
function rotation() {
  const box = el('div', { id: 'callback-secret', class: 'secret', role: 'status', 'aria-live': 'polite', hidden: true },
    el('p', { id: 'callback-secret-note' }),
    el('label', { for: 'callback-secret-value' }, 'New callback secret'),
    el('input', { id: 'callback-secret-value', type: 'text', readonly: true }),
    el('button', { type: 'button', class: 'secondary', 'data-copy': 'callback-secret-value' }, 'Copy secret'));
  const error = el('p', { id: 'callback-rotate-error', class: 'error', role: 'alert' });
  const button = el('button', { type: 'button', id: 'callback-rotate', class: 'secondary', onclick: () => rotateCallbackSecret(button, box, error) },
    'Rotate the callback secret');
  return [el('h4', {}, 'Rotate the callback secret'),
    el('p', {}, 'A new secret signs every callback from now on; for a while the previous one signs too, so receivers can switch without missing one.'),
    button, error, box];
}

async function rotateCallbackSecret(button, box, error) {
  if (!window.confirm('Rotate the signing secret of your callbacks? Receivers must switch to the new secret before the previous one stops signing.')) return;
  button.disabled = true;
  error.textContent = '';
  try {
    const { data } = await api('POST', '/v1/account/rotate-secret');
    webhookSecret = data.webhook_secret;
    $('callback-secret-code').textContent = webhookSecret;
    const until = data.previous_secret_expires_at;
    $('callback-secret-note').textContent = 'New callback signing secret, shown once here: keep it to verify callbacks. ' +
      (until ? `Until ${time(until)} every callback carries two signatures, one with this secret and one with the previous one, so both secrets are valid; then only this one.`
        : 'The previous secret no longer signs.');
    $('callback-secret-value').value = webhookSecret;
    box.hidden = false;
    $('callback-secret-value').focus();
  } catch (err) {
    error.textContent = String(err);
  } finally {
    button.disabled = false;
  }
}
