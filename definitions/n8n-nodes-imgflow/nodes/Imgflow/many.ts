import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError, sleep } from 'n8n-workflow';

import { baseUrl, nodeError, send } from './api';
import type { BatchRecord } from './batch';
import { BatchPacker, batchIdempotencyKey, batchRecord, buildBatchRequest, listField } from './batch';
import {
	camelCase,
	catalog,
	catalogOperation,
	collectionOf,
	offers,
	paramName,
	recordParamName,
	sourceFields,
} from './catalog';
import { failedJob, withFile } from './operations';
import { inlineWait } from './request';

// Image > Compress Many: every input item is one image of one batch (POST
// /v1/batches, the catalog's compress_many), so n images cost one request
// and one wait instead of n. The output is an item per image, in input
// order and paired with it: the image's job, and its compressed file.

type Ctx = IExecuteFunctions;

/** The record of input item i: its image by the Input Type, its fields. */
async function itemRecord(ctx: Ctx, i: number): Promise<BatchRecord> {
	const op = catalogOperation('compress_many');
	const values: IDataObject = {};
	const collection = ctx.getNodeParameter('additionalFields', i, {}) as IDataObject;
	for (const f of listField(op).fields ?? []) {
		if (!sourceFields[f.key]) values[f.key] = collection[recordParamName(f)];
	}
	const inputType = ctx.getNodeParameter('inputType', i) as string;
	if (inputType === 'binary') {
		const prop = ctx.getNodeParameter('binaryPropertyName', i) as string;
		const meta = ctx.helpers.assertBinaryData(i, prop);
		// JSON carries the bytes as base64; the API reads the type from them.
		values.image_base64 = (await ctx.helpers.getBinaryDataBuffer(i, prop)).toString('base64');
		if (!values.filename && meta.fileName) values.filename = meta.fileName;
	} else {
		for (const [field, type] of Object.entries(sourceFields)) {
			if (type === inputType) values[field] = ctx.getNodeParameter(camelCase(field), i) as string;
		}
	}
	return batchRecord(op, values, i);
}

/** Sends one batch, and polls it until it is finished or the deadline. */
async function runBatch(
	ctx: Ctx,
	chunk: number,
	first: number,
	records: BatchRecord[],
	batchValues: IDataObject,
	deadline: number,
	timeout: number,
): Promise<IDataObject[]> {
	const op = catalogOperation('compress_many');
	const base = await baseUrl(ctx);
	const wait = inlineWait(timeout, catalog.limits.maxWait);
	const req = buildBatchRequest(op, base, records, batchValues, wait);
	req.headers['Idempotency-Key'] = batchIdempotencyKey(ctx.getExecutionId(), ctx.getNode().id, chunk);
	let { status, body: batch, headers } = await send(ctx, req, first, (wait + 60) * 1000);
	while (status === 202) {
		if (Date.now() >= deadline) {
			const err = new NodeOperationError(
				ctx.getNode(),
				`Batch ${batch.id} did not finish within ${timeout} seconds; its jobs are listed at GET /v1/batches/${batch.id}/jobs`,
				{ itemIndex: first },
			);
			err.context.code = 'timeout';
			err.context.batch_id = batch.id;
			throw err;
		}
		const retryAfter = Number(headers['retry-after']) || 1;
		await sleep(Math.min(retryAfter * 1000, Math.max(0, deadline - Date.now())));
		({ status, body: batch, headers } = await send(
			ctx,
			{
				method: 'GET',
				url: `${base}/v1/batches/${encodeURIComponent(String(batch.id))}`,
				qs: { ...op.query, poll: 1 },
				headers: {},
			},
			first,
		));
	}
	return (batch.jobs ?? []) as IDataObject[];
}

export async function compressMany(ctx: Ctx): Promise<INodeExecutionData[]> {
	const items = ctx.getInputData();
	if (items.length === 0) return [];
	const op = catalogOperation('compress_many');
	const options = ctx.getNodeParameter('options', 0, {}) as IDataObject;
	const timeout = Number(options.timeout ?? 600);
	const deadline = Date.now() + timeout * 1000;
	const batchValues: IDataObject = {};
	const collections: Record<string, IDataObject> = {};
	for (const f of op.inputs) {
		if (f.type === 'list') continue;
		const c = collectionOf(offers[op.key], f); // Additional Fields, or Image Options
		collections[c] ??= ctx.getNodeParameter(c, 0, {}) as IDataObject;
		batchValues[f.key] = collections[c][paramName(op.key, f)];
	}

	const out: INodeExecutionData[] = [];
	const base = await baseUrl(ctx);
	const finish = async (jobs: IDataObject[], offset: number, count: number) => {
		if (jobs.length !== count) {
			throw new NodeOperationError(ctx.getNode(), `the batch answered ${jobs.length} jobs for ${count} images`, {
				itemIndex: offset,
			});
		}
		for (const job of jobs) {
			const i = offset + Number(job.index);
			try {
				if (job.status === 'failed') throw failedJob(ctx, job, i);
				out.push(await withFile(ctx, i, base, job, options.download !== false, options));
			} catch (error) {
				const failure = nodeError(ctx, error, i);
				if (!ctx.continueOnFail()) throw failure;
				const json: IDataObject = { error: failure.message, code: String(failure.context.code ?? 'node_error') };
				if (job.id) json.job_id = job.id;
				out.push({ json, pairedItem: { item: i } });
			}
		}
	};

	// Records are read and sent a batch at a time (BatchPacker).
	const packer = new BatchPacker(catalog.limits.maxBatchItems, catalog.limits.maxBatchBody - 64 * 1024);
	let offset = 0;
	let chunk = 0;
	const sendBatch = async (records: BatchRecord[]) => {
		const jobs = await runBatch(ctx, chunk++, offset, records, batchValues, deadline, timeout);
		await finish(jobs, offset, records.length);
		offset += records.length;
	};
	for (let i = 0; i < items.length; i++) {
		let full: BatchRecord[] | undefined;
		try {
			full = packer.add(await itemRecord(ctx, i), i);
		} catch (error) {
			throw nodeError(ctx, error, i);
		}
		if (full) await sendBatch(full);
	}
	await sendBatch(packer.take());
	return out;
}
