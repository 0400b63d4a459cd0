// The imgflow Trigger's hooks (dist/, after build): which hooks the chosen
// events need, the bodies that subscribe them, and the node's webhook
// methods and webhook run against a stand-in for n8n and the imgflow API.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
	ImgflowTrigger,
	subscriptions,
	wanted,
	verifyAny,
	storedHooks,
} = require('../dist/nodes/ImgflowTrigger/ImgflowTrigger.node');
const { sign } = require('../dist/nodes/Imgflow/signature');

test('each chosen event needs the hook of its catalog trigger', () => {
	assert.deepEqual(subscriptions(['job.completed']), [{ trigger: 'job_finished', event: 'job.completed', body: { event: 'job.completed' } }]);
	// Two job events: one job.finished hook covers both.
	assert.deepEqual(subscriptions(['job.completed', 'job.failed']).map((s) => s.event), ['job.finished']);
	assert.deepEqual(subscriptions(['account.credits_low'], (name, fallback) => (name === 'threshold' ? 120 : fallback)), [
		{ trigger: 'credits_low', event: 'account.credits_low', body: { event: 'account.credits_low', threshold: 120 } },
	]);
	// The threshold left as it is: the catalog's default.
	assert.deepEqual(subscriptions(['account.credits_low'])[0].body, { event: 'account.credits_low', threshold: 50 });
	assert.deepEqual(subscriptions(['batch.finished']), [{ trigger: 'batch_finished', event: 'batch.finished', body: { event: 'batch.finished' } }]);
	assert.deepEqual(
		subscriptions(['job.failed', 'batch.finished', 'account.credits_low']).map((s) => s.event),
		['job.failed', 'account.credits_low', 'batch.finished'],
	);
	assert.deepEqual(subscriptions([]), []);
});

test('a delivery starts the workflow only for a chosen event', () => {
	assert.equal(wanted(['job.finished'], 'job.completed'), true);
	assert.equal(wanted(['job.finished'], 'job.failed'), true);
	assert.equal(wanted(['job.completed'], 'job.failed'), false);
	assert.equal(wanted(['account.credits_low'], 'account.credits_low'), true);
	assert.equal(wanted(['job.finished'], 'account.credits_low'), false);
	assert.equal(wanted(['job.finished'], 'batch.finished'), false);
	assert.equal(wanted(['batch.finished'], 'batch.finished'), true);
	assert.equal(wanted(['job.finished'], 'hook.test'), false);
});

test('a delivery verifies with any of the node hooks secrets, and with none else', () => {
	const a = 'whsec_' + Buffer.from('a'.repeat(32)).toString('base64');
	const b = 'whsec_' + Buffer.from('b'.repeat(32)).toString('base64');
	const c = 'whsec_' + Buffer.from('c'.repeat(32)).toString('base64');
	const now = 1_800_000_000;
	const body = '{"type":"batch.finished"}';
	const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': sign(b, 'msg_1', now, body) };
	assert.equal(verifyAny([a, b], headers, body, now).ok, true);
	assert.equal(verifyAny([a, c], headers, body, now).ok, false);
	assert.equal(verifyAny([], headers, body, now).ok, false);
});

test('a hook kept by version 0.1 of the node is read as the Job Finished hook', () => {
	assert.deepEqual(storedHooks({ hookId: 'h1', secret: 's1', event: 'job.finished' }), {
		job_finished: { hookId: 'h1', secret: 's1', event: 'job.finished' },
	});
});

// fakeImgflow answers the hook routes as the API does.
function fakeImgflow() {
	const hooks = new Map();
	const calls = [];
	let n = 0;
	return {
		hooks,
		calls,
		request(options) {
			calls.push({ method: options.method, url: options.url, body: options.body });
			const m = /\/v1\/hooks(?:\/([^/?]+))?$/.exec(options.url);
			if (!m) return { statusCode: 404, headers: {}, body: { error: 'no route' } };
			if (options.method === 'POST') {
				const id = `hook_${++n}`;
				const secret = 'whsec_' + Buffer.from(`secret-${id}`.padEnd(32, '.')).toString('base64');
				const hook = { id, secret, ...options.body };
				if (hook.event === 'account.credits_low' && hook.threshold === undefined) hook.threshold = 50;
				hooks.set(id, hook);
				return { statusCode: 201, headers: {}, body: hook };
			}
			const hook = hooks.get(decodeURIComponent(m[1]));
			if (!hook) return { statusCode: 404, headers: {}, body: { error: 'not found', code: 'not_found' } };
			if (options.method === 'DELETE') {
				hooks.delete(hook.id);
				return { statusCode: 204, headers: {}, body: '' };
			}
			return { statusCode: 200, headers: {}, body: hook };
		},
	};
}

// hookContext is n8n's side: the node's parameters, static data, webhook URL
// and credential, requests going to api.
function hookContext(api, params, staticData) {
	return {
		getNodeParameter: (name, fallback) => (name in params ? params[name] : fallback),
		getWorkflowStaticData: () => staticData,
		getNodeWebhookUrl: () => 'https://n8n.example.com/webhook/abc/webhook',
		getCredentials: async () => ({ baseUrl: 'https://imgflow.example.com/', apiKey: 'k' }),
		getNode: () => ({ name: 'imgflow Trigger' }),
		helpers: { httpRequestWithAuthentication: async (_cred, options) => api.request(options) },
	};
}

test('activating subscribes one hook per chosen trigger with its body; deactivating deletes them', async () => {
	const node = new ImgflowTrigger();
	const methods = node.webhookMethods.default;
	const api = fakeImgflow();
	const data = {};
	const ctx = hookContext(api, { events: ['job.completed', 'account.credits_low', 'batch.finished'], threshold: 20 }, data);

	assert.equal(await methods.checkExists.call(ctx), false);
	assert.equal(await methods.create.call(ctx), true);
	const bodies = api.calls.filter((c) => c.method === 'POST').map((c) => c.body);
	const target = 'https://n8n.example.com/webhook/abc/webhook';
	assert.deepEqual(bodies, [
		{ target_url: target, event: 'job.completed' },
		{ target_url: target, event: 'account.credits_low', threshold: 20 },
		{ target_url: target, event: 'batch.finished' },
	]);
	assert.equal(api.calls.every((c) => c.url.startsWith('https://imgflow.example.com/v1/hooks')), true);
	assert.deepEqual(Object.keys(data.hooks).sort(), ['batch_finished', 'credits_low', 'job_finished']);
	assert.equal(await methods.checkExists.call(ctx), true);

	// Another threshold: the hooks are made again.
	const changed = hookContext(api, { events: ['job.completed', 'account.credits_low', 'batch.finished'], threshold: 5 }, data);
	assert.equal(await methods.checkExists.call(changed), false);
	assert.equal(api.hooks.size, 0, 'the outdated hooks are deleted, not left behind');
	await methods.create.call(changed);
	assert.equal([...api.hooks.values()].find((h) => h.event === 'account.credits_low').threshold, 5);

	// A hook deleted on the imgflow side is noticed.
	api.hooks.delete(data.hooks.batch_finished.hookId);
	assert.equal(await methods.checkExists.call(changed), false);
	await methods.create.call(changed);
	assert.equal(api.hooks.size, 3);

	assert.equal(await methods.delete.call(changed), true);
	assert.equal(api.hooks.size, 0);
	assert.equal(data.hooks, undefined);
});

test('a signed delivery of a chosen event starts the workflow with its data; a bad signature gets 401', async () => {
	const node = new ImgflowTrigger();
	const api = fakeImgflow();
	const data = {};
	const params = { events: ['batch.finished', 'account.credits_low'] };
	await node.webhookMethods.default.create.call(hookContext(api, params, data));
	const now = Math.floor(Date.now() / 1000);
	const deliver = async (secret, payload) => {
		const raw = Buffer.from(JSON.stringify(payload));
		const headers = { 'webhook-id': 'msg_9', 'webhook-timestamp': String(now), 'webhook-signature': sign(secret, 'msg_9', now, raw) };
		const res = { code: 200, sent: null, status(c) { this.code = c; return this; }, json(b) { this.sent = b; } };
		const out = await node.webhook.call({
			getRequestObject: () => ({ headers, rawBody: raw, body: payload }),
			getResponseObject: () => res,
			getWorkflowStaticData: () => data,
			getBodyData: () => payload,
			getNodeParameter: (name) => params[name],
			helpers: { returnJsonArray: (items) => items.map((json) => ({ json })) },
		});
		return { out, res };
	};
	const low = { type: 'account.credits_low', timestamp: '2026-11-25T07:00:00Z', data: { credits_remaining: 48, threshold: 50, job_id: 'j1' } };
	const { out } = await deliver(data.hooks.credits_low.secret, low);
	assert.deepEqual(out.workflowData[0][0].json, { credits_remaining: 48, threshold: 50, job_id: 'j1', event: 'account.credits_low', webhook_id: 'msg_9' });

	const batch = { type: 'batch.finished', timestamp: '2026-11-25T07:00:00Z', data: { id: 'b1', status: 'finished', counts: { total: 2 } } };
	const second = await deliver(data.hooks.batch_finished.secret, batch);
	assert.equal(second.out.workflowData[0][0].json.id, 'b1');

	const job = { type: 'job.completed', timestamp: '', data: { id: 'j2' } };
	const ignored = await deliver(data.hooks.batch_finished.secret, job);
	assert.deepEqual(ignored.out, { webhookResponse: { received: true, ignored: 'job.completed' } });

	const forged = await deliver('whsec_' + Buffer.from('not-the-secret-of-any-hook-0000').toString('base64'), low);
	assert.deepEqual(forged.out, { noWebhookResponse: true });
	assert.equal(forged.res.code, 401);
});
