import type {
	IDataObject,
	IHookFunctions,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { baseUrl, send } from '../Imgflow/api';
import { catalog, hookEvents } from '../Imgflow/catalog';
import { verify } from '../Imgflow/signature';

const eventHelp: Record<string, string> = {
	'job.completed': 'A job finished with a compressed image',
	'job.failed': 'A job failed (for example no credits, or an image that could not be read)',
	'job.finished': 'A job completed or failed',
};

/**
 * The one hook event that covers the chosen events: imgflow sends every
 * delivery of a job.finished hook, typed job.completed or job.failed.
 */
export function subscriptionEvent(events: string[]): string {
	if (events.length === 1) return events[0];
	return 'job.finished';
}

/** Whether a delivery of this type is one the user chose. */
export function wanted(events: string[], type: string): boolean {
	return events.includes(type) || events.includes('job.finished');
}

interface HookData extends IDataObject {
	hookId?: string;
	secret?: string;
	event?: string;
}

export class ImgflowTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'imgflow Trigger',
		name: 'imgflowTrigger',
		icon: { light: 'file:../../icons/imgflow.svg', dark: 'file:../../icons/imgflow.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Starts the workflow when an imgflow compress job finishes',
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
				options: hookEvents()
					.map((e) => ({ name: e, value: e, description: eventHelp[e] ?? e }))
					.sort((a, b) => a.name.localeCompare(b.name)),
				default: ['job.completed'],
				description: 'Which finished jobs start the workflow',
			},
		],
	};

	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				const data = this.getWorkflowStaticData('node') as HookData;
				if (!data.hookId) return false;
				const base = await baseUrl(this);
				// Only a hook that is gone (404) is made again; any other
				// failure (a bad key, imgflow down) reaches the user.
				const { status, body } = await send(
					this,
					{
						method: 'GET',
						url: `${base}${catalog.hooks.delete.replace('{id}', encodeURIComponent(data.hookId))}`,
						qs: {},
						headers: {},
					},
					undefined,
					60_000,
					true,
				);
				const events = this.getNodeParameter('events') as string[];
				if (
					status === 200 &&
					body.target_url === this.getNodeWebhookUrl('default') &&
					body.event === subscriptionEvent(events) &&
					data.secret
				) {
					return true;
				}
				delete data.hookId;
				delete data.secret;
				delete data.event;
				return false;
			},

			async create(this: IHookFunctions): Promise<boolean> {
				const events = this.getNodeParameter('events') as string[];
				const event = subscriptionEvent(events);
				const { body } = await send(this, {
					method: 'POST',
					url: (await baseUrl(this)) + catalog.hooks.create,
					qs: {},
					headers: { 'Content-Type': 'application/json' },
					body: { target_url: this.getNodeWebhookUrl('default'), event },
				});
				const data = this.getWorkflowStaticData('node') as HookData;
				data.hookId = String(body.id);
				data.secret = String(body.secret);
				data.event = event;
				return true;
			},

			async delete(this: IHookFunctions): Promise<boolean> {
				const data = this.getWorkflowStaticData('node') as HookData;
				if (data.hookId) {
					// Already gone (404) counts as deleted; anything else is
					// reported, and n8n keeps the hook data to try again.
					await send(
						this,
						{
							method: 'DELETE',
							url: `${await baseUrl(this)}${catalog.hooks.delete.replace('{id}', encodeURIComponent(data.hookId))}`,
							qs: {},
							headers: {},
						},
						undefined,
						60_000,
						true,
					);
				}
				delete data.hookId;
				delete data.secret;
				delete data.event;
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const req = this.getRequestObject();
		const res = this.getResponseObject();
		const data = this.getWorkflowStaticData('node') as HookData;
		const raw = (req as unknown as { rawBody?: Buffer }).rawBody ?? Buffer.from(JSON.stringify(req.body ?? {}));
		const check = verify(String(data.secret ?? ''), req.headers, raw, Math.floor(Date.now() / 1000));
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
		const job = (body.data ?? {}) as IDataObject;
		return {
			workflowData: [
				this.helpers.returnJsonArray([
					{ ...job, event: type, webhook_id: req.headers['webhook-id'] ?? null },
				]),
			],
		};
	}
}
