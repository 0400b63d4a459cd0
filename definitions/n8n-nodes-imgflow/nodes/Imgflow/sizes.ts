import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError, sleep } from 'n8n-workflow';

import { baseUrl, download, nodeError, send } from './api';
import { catalog, catalogOperation, listEntryName, offers, sourceFields } from './catalog';
import { failedJob, fieldValues, readImage } from './operations';
import { buildRequest, idempotencyKey, inlineWait } from './request';

// Image > Make Image Sizes: each input item's image becomes a responsive set
// (POST /v1/jobs/variants, the catalog's compress_variants): one upload and
// one decode, a credit per size. The output is one item per size, in the
// order the sizes are listed and paired with the input item: the size's
// file in the output binary field, and sizeJson's fields. Every item of a
// set carries the set's srcset and <picture> snippet, so whichever item a
// later node reads (the first, or each) has them.

type Ctx = IExecuteFunctions;

/** The sizes as the API takes them: one record per Size entry, empty values left out. */
function sizeRecords(ctx: Ctx, i: number): IDataObject[] {
	const op = catalogOperation('compress_variants');
	const list = op.inputs.find((f) => f.type === 'list');
	if (!list) throw new Error('compress_variants has no list field');
	const param = ctx.getNodeParameter(list.key, i, {}) as IDataObject;
	const entries = (param[listEntryName(offers[op.key].listEntry ?? '')] ?? []) as IDataObject[];
	return entries.map((entry) => {
		const record: IDataObject = {};
		for (const f of list.fields ?? []) {
			const v = entry[f.key];
			if (v !== undefined && v !== null && v !== '') record[f.key] = typeof v === 'string' ? v.trim() : v;
		}
		return record;
	});
}

/** The format of a MIME type as a user names it: image/webp is webp. */
function formatOf(mimeType: unknown): string {
	return String(mimeType ?? '').replace(/^image\//, '');
}

/** An output item's JSON for one size of a set: the size, then the set's. */
export function sizeJson(set: IDataObject, job: IDataObject): IDataObject {
	const r = (job.result ?? {}) as IDataObject;
	return {
		id: job.variant,
		width: r.width,
		height: r.height,
		bytes: r.compressed_size,
		format: formatOf(r.mime_type),
		mime_type: r.mime_type,
		filename: r.filename,
		url: r.file_url,
		job_id: job.id,
		set_id: set.id,
		srcset: set.srcset ?? '',
		picture: set.picture ?? '',
		job,
	};
}

/** Sends one set and polls it until every size is finished or the deadline. */
async function runSet(ctx: Ctx, i: number, base: string, timeout: number): Promise<IDataObject> {
	const op = catalogOperation('compress_variants');
	const deadline = Date.now() + timeout * 1000;
	const image = await readImage(ctx, i);
	const values = {
		...fieldValues(ctx, op, i, [...Object.keys(sourceFields), 'variants']),
		...image.values,
		variants: sizeRecords(ctx, i),
	};
	const req = buildRequest(op, base, values, image.upload);
	const wait = inlineWait(timeout, catalog.limits.maxWait);
	req.qs.wait = wait;
	req.headers['Idempotency-Key'] = idempotencyKey(ctx.getExecutionId(), ctx.getNode().id, i);
	let { status, body: set, headers } = await send(ctx, req, i, (wait + 60) * 1000);
	while (status === 202) {
		if (Date.now() >= deadline) {
			const err = new NodeOperationError(
				ctx.getNode(),
				`Set ${set.id} did not finish within ${timeout} seconds; its jobs are listed at GET /v1/batches/${set.id}/jobs`,
				{ itemIndex: i },
			);
			err.context.code = 'timeout';
			err.context.set_id = set.id;
			throw err;
		}
		const retryAfter = Number(headers['retry-after']) || 1;
		await sleep(Math.min(retryAfter * 1000, Math.max(0, deadline - Date.now())));
		({ status, body: set, headers } = await send(
			ctx,
			{
				method: 'GET',
				url: `${base}/v1/batches/${encodeURIComponent(String(set.id))}`,
				qs: { ...op.query, poll: 1 },
				headers: {},
			},
			i,
		));
	}
	return set;
}

export async function makeSizes(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const options = ctx.getNodeParameter('options', i, {}) as IDataObject;
	const timeout = Number(options.timeout ?? 300);
	const base = await baseUrl(ctx);
	const set = await runSet(ctx, i, base, timeout);
	const prop = String(options.outputBinaryPropertyName || 'data');
	const out: INodeExecutionData[] = [];
	for (const job of (set.jobs ?? []) as IDataObject[]) {
		try {
			if (job.status === 'failed') throw failedJob(ctx, job, i);
			const item: INodeExecutionData = { json: sizeJson(set, job), pairedItem: { item: i } };
			if (options.download !== false) {
				const r = (job.result ?? {}) as IDataObject;
				const data = await download(ctx, base, String(job.id), i);
				item.binary = {
					[prop]: await ctx.helpers.prepareBinaryData(
						data,
						String(r.filename || `${job.id}`),
						String(r.mime_type || 'application/octet-stream'),
					),
				};
			}
			out.push(item);
		} catch (error) {
			const failure = nodeError(ctx, error, i);
			if (!ctx.continueOnFail()) throw failure;
			out.push({
				json: { id: job.variant, error: failure.message, code: String(failure.context.code ?? 'node_error'), job_id: job.id, set_id: set.id },
				pairedItem: { item: i },
			});
		}
	}
	return out;
}
