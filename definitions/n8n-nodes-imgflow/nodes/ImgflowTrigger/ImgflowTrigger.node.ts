import type {
	IDataObject,
	IHookFunctions,
	INodeProperties,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { baseUrl, send } from '../Imgflow/api';
import type { CatalogOperation } from '../Imgflow/catalog';
import { catalog, fieldProperty, hookEvents, hookTriggers, paramName } from '../Imgflow/catalog';
import type { VerifyResult } from '../Imgflow/signature';
import { verify } from '../Imgflow/signature';

// The trigger subscribes one imgflow hook per catalog hook trigger whose
// events are chosen (Job Finished, Credits Low, Batch Finished): a hook
// has one event, and every hook of the node posts to the node's one
// webhook URL, signed with its own secret.

const eventHelp: Record<string, string> = {
	'job.completed': 'A job finished with a compressed image',
	'job.failed': 'A job failed (for example no credits, or an image that could not be read)',
	'job.finished': 'A job completed or failed',
};

/** The event input of a trigger that offers several events (Job Finished). */
const EVENT_INPUT = 'event';

/**
 * The event of a trigger with several events that covers them all (its
 * event input's default, job.finished): imgflow types each delivery of
 * such a hook as one of the others (job.completed or job.failed).
 */
export function coveringEvent(op: CatalogOperation): string {
	return op.inputs.find((f) => f.key === EVENT_INPUT)?.default || op.hookEvents[0];
}

/** One hook the node needs: the catalog trigger, and the body besides target_url. */
export interface Subscription {
	trigger: string;
	event: string;
	body: IDataObject;
}

/**
 * The hooks the chosen events need, one per catalog hook trigger with a
 * chosen event: a trigger with one event subscribes it with its inputs
 * (Credits Low's threshold, read by param); one with several subscribes the
 * one chosen, or the event covering them when several are.
 */
export function subscriptions(
	events: string[],
	param: (name: string, fallback: unknown) => unknown = (_n, fallback) => fallback,
): Subscription[] {
	const out: Subscription[] = [];
	for (const op of hookTriggers()) {
		const chosen = op.hookEvents.filter((e) => events.includes(e));
		if (chosen.length === 0) continue;
		const event = chosen.length === 1 ? chosen[0] : coveringEvent(op);
		const body: IDataObject = { event };
		for (const f of op.inputs) {
			if (f.key === EVENT_INPUT || f.in !== 'body') continue;
			const fallback = f.type === 'integer' || f.type === 'number' ? Number(f.default) : f.default;
			const value = param(paramName(op.key, f), fallback);
			if (value !== undefined && value !== null && value !== '') body[f.key] = value as IDataObject[string];
		}
		out.push({ trigger: op.key, event, body });
	}
	return out;
}

/** Whether a delivery of this type is one the user chose. */
export function wanted(events: string[], type: string): boolean {
	if (events.includes(type)) return true;
	return hookTriggers().some(
		(op) => op.hookEvents.length > 1 && op.hookEvents.includes(type) && events.includes(coveringEvent(op)),
	);
}

/** Accepted when the delivery verifies with any of the node's hook secrets. */
export function verifyAny(
	secrets: string[],
	headers: Record<string, string | string[] | undefined>,
	body: Buffer | string,
	nowSeconds: number,
): VerifyResult {
	let first: VerifyResult = { ok: false, reason: 'no hook secret' };
	for (const [i, secret] of secrets.entries()) {
		const check = verify(secret, headers, body, nowSeconds);
		if (check.ok) return check;
		if (i === 0) first = check;
	}
	return first;
}

interface HookRecord extends IDataObject {
	hookId: string;
	secret: string;
	event: string;
}

interface HookData extends IDataObject {
	/** The node's hooks by catalog trigger key. */
	hooks?: Record<string, HookRecord>;
	// Version 0.1 kept one hook here; read as the Job Finished hook.
	hookId?: string;
	secret?: string;
	event?: string;
}

/** The node's hooks, including one kept by version 0.1 of the node. */
export function storedHooks(data: HookData): Record<string, HookRecord> {
	const hooks = { ...(data.hooks ?? {}) };
	if (data.hookId) {
		const job = hookTriggers().find((op) => op.hookEvents.length > 1) ?? hookTriggers()[0];
		hooks[job.key] = { hookId: data.hookId, secret: String(data.secret ?? ''), event: String(data.event ?? '') };
	}
	return hooks;
}

function forget(data: HookData): void {
	delete data.hooks;
	delete data.hookId;
	delete data.secret;
	delete data.event;
}

/** The parameters of the hook triggers' inputs (Credits Low's threshold), each shown for its event. */
function inputProperties(): INodeProperties[] {
	const props: INodeProperties[] = [];
	for (const op of hookTriggers()) {
		for (const f of op.inputs) {
			if (f.key === EVENT_INPUT || f.in !== 'body') continue;
			props.push({ ...fieldProperty(op.key, f), displayOptions: { show: { events: op.hookEvents } } });
		}
	}
	return props;
}

function eventOptions() {
	const help: Record<string, string> = { ...eventHelp };
	for (const op of hookTriggers()) {
		if (op.hookEvents.length === 1) help[op.hookEvents[0]] = op.description.replace(/\.$/, '');
	}
	return hookEvents()
		.map((e) => ({ name: e, value: e, description: help[e] ?? e }))
		.sort((a, b) => a.name.localeCompare(b.name));
}

export class ImgflowTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'imgflow Trigger',
		name: 'imgflowTrigger',
		icon: { light: 'file:../../icons/imgflow.svg', dark: 'file:../../icons/imgflow.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Starts the workflow when an imgflow job or batch finishes, or credits run low',
		defaults: { name: 'imgflow Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imgflowApi', required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				path: 'webhook',
			},
		],
		properties: [
			{
				displayName: 'Events',
				name: 'events',
				type: 'multiOptions',
				required: true,
				options: eventOptions(),
				default: ['job.completed'],
				description: 'Which imgflow events start the workflow',
			},
			...inputProperties(),
		],
	};

	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				const data = this.getWorkflowStaticData('node') as HookData;
				const have = storedHooks(data);
				const want = subscriptions(this.getNodeParameter('events') as string[], (n, f) =>
					this.getNodeParameter(n, f),
				);
				const base = await baseUrl(this);
				const url = (id: string) => `${base}${catalog.hooks.delete.replace('{id}', encodeURIComponent(id))}`;
				let all = want.length > 0 && Object.keys(have).length === want.length;
				for (const sub of want) {
					const h = have[sub.trigger];
					if (!all || !h) {
						all = false;
						break;
					}
					// Only a hook that is gone (404) is made again; any other
					// failure (a bad key, imgflow down) reaches the user.
					const { status, body } = await send(
						this,
						{ method: 'GET', url: url(h.hookId), qs: {}, headers: {} },
						undefined,
						60_000,
						true,
					);
					all =
						status === 200 &&
						body.target_url === this.getNodeWebhookUrl('default') &&
						Object.entries(sub.body).every(([k, v]) => body[k] === v) &&
						h.secret !== '';
				}
				if (all) return true;
				// What the node has is not what it needs: its hooks go, and
				// create makes them all again.
				for (const h of Object.values(have)) {
					await send(this, { method: 'DELETE', url: url(h.hookId), qs: {}, headers: {} }, undefined, 60_000, true);
				}
				forget(data);
				return false;
			},

			async create(this: IHookFunctions): Promise<boolean> {
				const want = subscriptions(this.getNodeParameter('events') as string[], (n, f) =>
					this.getNodeParameter(n, f),
				);
				const data = this.getWorkflowStaticData('node') as HookData;
				const base = await baseUrl(this);
				data.hooks = storedHooks(data);
				delete data.hookId;
				delete data.secret;
				delete data.event;
				for (const sub of want) {
					const { body } = await send(this, {
						method: 'POST',
						url: base + catalog.hooks.create,
						qs: {},
						headers: { 'Content-Type': 'application/json' },
						body: { target_url: this.getNodeWebhookUrl('default'), ...sub.body },
					});
					// Kept as each is made, so delete removes them even if a later one fails.
					data.hooks[sub.trigger] = { hookId: String(body.id), secret: String(body.secret), event: sub.event };
				}
				return true;
			},

			async delete(this: IHookFunctions): Promise<boolean> {
				const data = this.getWorkflowStaticData('node') as HookData;
				const base = await baseUrl(this);
				for (const h of Object.values(storedHooks(data))) {
					// Already gone (404) counts as deleted; anything else is
					// reported, and n8n keeps the hook data to try again.
					await send(
						this,
						{
							method: 'DELETE',
							url: `${base}${catalog.hooks.delete.replace('{id}', encodeURIComponent(h.hookId))}`,
							qs: {},
							headers: {},
						},
						undefined,
						60_000,
						true,
					);
				}
				forget(data);
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const req = this.getRequestObject();
		const res = this.getResponseObject();
		const data = this.getWorkflowStaticData('node') as HookData;
		const raw = (req as unknown as { rawBody?: Buffer }).rawBody ?? Buffer.from(JSON.stringify(req.body ?? {}));
		const secrets = Object.values(storedHooks(data)).map((h) => h.secret);
		const check = verifyAny(secrets, req.headers, raw, Math.floor(Date.now() / 1000));
		if (!check.ok) {
			res.status(401).json({ error: `signature not accepted: ${check.reason}`, code: 'invalid_signature' });
			return { noWebhookResponse: true };
		}
		const body = this.getBodyData() as IDataObject;
		const events = this.getNodeParameter('events') as string[];
		const type = String(body.type ?? '');
		if (!wanted(events, type)) {
			// Signed and ours, but not an event this workflow runs for.
			return { webhookResponse: { received: true, ignored: type } };
		}
		const item = (body.data ?? {}) as IDataObject;
		return {
			workflowData: [
				this.helpers.returnJsonArray([{ ...item, event: type, webhook_id: req.headers['webhook-id'] ?? null }]),
			],
		};
	}
}
