// Standard Webhooks verification of the imgflow Trigger (dist/, after build).
const test = require('node:test');
const assert = require('node:assert/strict');
const { sign, verify, TOLERANCE_SECONDS } = require('../dist/nodes/Imgflow/signature');

// The specification's own test vector (also checked by connector/webhook).
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const ts = 1614265330;
const body = '{"test": 2432232314}';
const vector = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

const headers = (sig, t = ts) => ({
	'webhook-id': id,
	'webhook-timestamp': String(t),
	'webhook-signature': sig,
});

test('signs like the Standard Webhooks test vector', () => {
	assert.equal(sign(secret, id, ts, body), vector);
});

test('accepts the vector within the tolerance', () => {
	assert.deepEqual(verify(secret, headers(vector), Buffer.from(body), ts + 10), { ok: true });
});

test('accepts when one of several space-separated signatures matches (secret rotation)', () => {
	const r = verify(secret, headers(`v1,AAAA ${vector}`), body, ts);
	assert.equal(r.ok, true);
});

test('refuses a body changed after signing', () => {
	const r = verify(secret, headers(vector), '{"test": 2432232315}', ts);
	assert.equal(r.ok, false);
	assert.match(r.reason, /does not match/);
});

test('refuses another secret', () => {
	const other = 'whsec_Zt4pQ2mW8xK1vN7bR3cY6hJ9sL5dF0gA';
	assert.equal(verify(other, headers(vector), body, ts).ok, false);
});

test('refuses a stale or future timestamp even with a valid signature', () => {
	const old = verify(secret, headers(vector), body, ts + TOLERANCE_SECONDS + 1);
	assert.equal(old.ok, false);
	assert.match(old.reason, /too old or too new/);
	assert.equal(verify(secret, headers(vector), body, ts - TOLERANCE_SECONDS - 1).ok, false);
});

test('refuses missing headers, a non-numeric timestamp and an empty secret', () => {
	assert.equal(verify(secret, { 'webhook-id': id }, body, ts).ok, false);
	assert.equal(verify(secret, headers(vector, 'yesterday'), body, ts).ok, false);
	assert.equal(verify('', headers(vector), body, ts).ok, false);
});
