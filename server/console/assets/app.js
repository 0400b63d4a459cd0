// The console's shell: sign-in, the account line, and the hash router
// that shows one section at a time (#/try, #/jobs, #/jobs/<id>,
// #/deliveries, #/hooks, #/connect, #/apps). Each section's behaviour lives in its own module.
import { api, getKey, setKey, clearKey } from './api.js';
import * as tryIt from './try.js';
import * as bulk from './bulk.js';
import * as jobs from './jobs.js';
import * as job from './job.js';
import * as deliveries from './deliveries.js';
import * as hooks from './hooks.js';
import * as connect from './connect.js';
import * as apps from './apps.js';

const $ = (id) => document.getElementById(id);

export const account = {
  show(acct) {
    $('account-plan').textContent = `Plan: ${acct.subscription_type || 'unknown'}`;
    this.credits(acct.credits_remaining);
    $('account').hidden = false;
    $('nav').hidden = false;
  },
  credits(n) {
    if (n !== undefined && n !== null) $('account-credits').textContent = `Credits: ${n}`;
  },
};

async function signIn(event) {
  event.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  $('signin-error').textContent = '';
  if (!key) {
    $('signin-error').textContent = 'Enter your API key.';
    input.focus();
    return;
  }
  try {
    const { data } = await api('GET', '/v1/account', { key });
    setKey(key);
    input.value = '';
    account.show(data);
    connect.setAccount(data);
    if (!location.hash || location.hash === '#/signin') location.hash = '#/try';
    else route();
  } catch (err) {
    $('signin-error').textContent = String(err);
    input.focus();
  }
}

function signOut() {
  clearKey();
  $('account').hidden = true;
  $('nav').hidden = true;
  jobs.reset();
  job.reset();
  deliveries.reset();
  hooks.reset();
  connect.reset();
  apps.reset();
  tryIt.reset();
  location.hash = '#/signin';
  route();
}

const views = {
  signin: { section: 'view-signin', title: 'signin-title' },
  try: { section: 'view-try', title: 'try-title', open: tryIt.open },
  jobs: { section: 'view-jobs', title: 'jobs-title', open: jobs.openList, close: jobs.close },
  job: { section: 'view-job', title: 'job-title', open: job.openJob, close: job.close },
  deliveries: { section: 'view-deliveries', title: 'deliveries-page-title', open: deliveries.open },
  hooks: { section: 'view-hooks', title: 'hooks-title', open: hooks.open },
  connect: { section: 'view-connect', title: 'connect-title', open: connect.open },
  apps: { section: 'view-apps', title: 'apps-title', open: apps.open },
};

let first = true;
let shown; // the view on screen, closed (its timers stopped) when another opens

function route() {
  let name = 'signin';
  let arg;
  const hash = location.hash || '#/try';
  if (getKey()) {
    const m = hash.match(/^#\/jobs\/(.+)$/);
    if (m) {
      name = 'job';
      arg = decodeURIComponent(m[1]);
    } else {
      name = { '#/try': 'try', '#/jobs': 'jobs', '#/deliveries': 'deliveries', '#/hooks': 'hooks', '#/connect': 'connect', '#/apps': 'apps' }[hash] || 'try';
    }
  }
  if (shown?.close) shown.close();
  for (const v of Object.values(views)) $(v.section).hidden = true;
  const view = views[name];
  shown = view;
  $(view.section).hidden = false;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === `#/${name === 'job' ? 'jobs' : name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (view.open) view.open(arg);
  // Move focus to the new section's heading so screen readers and keyboard
  // users land in it; on first load the page starts at the top instead.
  if (!first) $(view.title).focus();
  first = false;
}

async function start() {
  $('signin-form').addEventListener('submit', signIn);
  $('sign-out').addEventListener('click', signOut);
  document.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-copy]');
    if (b) connect.copyFrom(b);
  });
  tryIt.init(account);
  bulk.init();
  jobs.init();
  job.init();
  deliveries.init();
  hooks.init();
  connect.init();
  window.addEventListener('hashchange', route);
  if (getKey()) {
    try {
      const { data } = await api('GET', '/v1/account');
      account.show(data);
      connect.setAccount(data);
    } catch (err) {
      if (err.status === 401) clearKey();
      $('signin-error').textContent = String(err);
    }
  }
  route();
}

start();
