import { createHmac, timingSafeEqual } from 'crypto';

// Standard Webhooks verification (https://www.standardwebhooks.com): the
// signature is "v1," + base64 HMAC-SHA256 of "<id>.<timestamp>.<body>",
// keyed with the base64 part of the whsec_ secret. Several signatures may
// be sent, space-separated, while a secret rotates.

/** How far a delivery's timestamp may be from now: 5 minutes, as the standard says. */
export const TOLERANCE_SECONDS = 5 * 60;

export type VerifyResult = { ok: true } | { ok: false; reason: string };

export function sign(secret: string, id: string, timestamp: number, body: Buffer | string): string {
	const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
	const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
	return `v1,${mac}`;
}

export function verify(
	secret: string,
	headers: Record<string, string | string[] | undefined>,
	body: Buffer | string,
	nowSeconds: number,
): VerifyResult {
	const one = (name: string) => {
		const v = headers[name];
		return Array.isArray(v) ? v[0] : v;
	};
	const id = one('webhook-id');
	const ts = one('webhook-timestamp');
	const sigs = one('webhook-signature');
	if (!secret) return { ok: false, reason: 'no signing secret stored for this trigger' };
	if (!id || !ts || !sigs) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
	if (!/^\d+$/.test(ts)) return { ok: false, reason: 'webhook-timestamp is not a number of seconds' };
	const timestamp = Number(ts);
	if (Math.abs(nowSeconds - timestamp) > TOLERANCE_SECONDS) {
		return { ok: false, reason: 'webhook-timestamp is too old or too new' };
	}
	const want = Buffer.from(sign(secret, id, timestamp, body));
	for (const got of sigs.split(' ')) {
		const g = Buffer.from(got);
		if (g.length === want.length && timingSafeEqual(g, want)) return { ok: true };
	}
	return { ok: false, reason: 'webhook-signature does not match' };
}
