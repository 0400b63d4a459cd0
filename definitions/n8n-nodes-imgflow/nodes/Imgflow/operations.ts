import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError, sleep } from 'n8n-workflow';

import { apiError, baseUrl, download, send } from './api';
import { catalog, collectionOf, offeredOperation, offers, paramName, sourceFields } from './catalog';
import type { CatalogOperation } from './catalog';
import type { Upload } from './request';
import { buildRequest, idempotencyKey, inlineWait, sniffImageType } from './request';
import { makeSizes } from './sizes';

// One item of one operation. Errors are thrown; the node turns them into
// error items when Continue On Fail is on.

type Ctx = IExecuteFunctions;

export async function runItem(
	ctx: Ctx,
	resource: string,
	operation: string,
	i: number,
): Promise<INodeExecutionData[]> {
	const key = `${resource}:${operation}`;
	switch (key) {
		case 'image:compress':
			return await compress(ctx, i);
		case 'image:check':
			return await checkImage(ctx, i);
		case 'image:makeSizes':
			return await makeSizes(ctx, i);
		case 'image:validate':
			return await validate(ctx, i);
		case 'job:get':
			return await getJob(ctx, i);
		case 'job:getMany':
			return await getMany(ctx, i);
		case 'account:get':
			return await simple(ctx, offeredOperation('account', 'get'), i);
	}
	throw new NodeOperationError(ctx.getNode(), `The operation "${operation}" is not known`, {
		itemIndex: i,
	});
}

function opKey(op: CatalogOperation): string {
	return op.key;
}

/** The catalog field values of an item, by the API's field names. */
export function fieldValues(ctx: Ctx, op: CatalogOperation, i: number, skip: string[] = []): IDataObject {
	const offer = offers[opKey(op)];
	const collections: Record<string, IDataObject> = {};
	const values: IDataObject = {};
	for (const field of op.inputs) {
		if (skip.includes(field.key)) continue;
		const name = paramName(op.key, field);
		if (field.required) {
			values[field.key] = ctx.getNodeParameter(name, i);
			continue;
		}
		const c = collectionOf(offer, field);
		collections[c] ??= ctx.getNodeParameter(c, i, {}) as IDataObject;
		values[field.key] = collections[c][name];
	}
	return values;
}

async function simple(ctx: Ctx, op: CatalogOperation, i: number): Promise<INodeExecutionData[]> {
	const req = buildRequest(op, await baseUrl(ctx), fieldValues(ctx, op, i));
	const { body } = await send(ctx, req, i);
	return [{ json: body, pairedItem: { item: i } }];
}

interface ImageInput {
	values: IDataObject;
	upload?: Upload;
}

/** The item's image as the Input Type says: an upload, a URL or base64. */
export async function readImage(ctx: Ctx, i: number): Promise<ImageInput> {
	const inputType = ctx.getNodeParameter('inputType', i) as string;
	const values: IDataObject = {};
	if (inputType === 'binary') {
		const prop = ctx.getNodeParameter('binaryPropertyName', i) as string;
		const meta = ctx.helpers.assertBinaryData(i, prop);
		const named = { fileName: meta.fileName ?? 'image', mimeType: meta.mimeType };
		if (meta.id) {
			// Filesystem or S3 mode: the bytes stay in n8n's store and stream
			// into the request; the size lets the API refuse an oversized
			// image before reading it.
			const { fileSize } = await ctx.helpers.getBinaryMetadata(meta.id);
			const stream = await ctx.helpers.getBinaryStream(meta.id);
			return { values, upload: { ...named, stream, size: Number(fileSize) || undefined } };
		}
		const data = await ctx.helpers.getBinaryDataBuffer(i, prop);
		return { values, upload: { ...named, data } };
	}
	for (const [field, type] of Object.entries(sourceFields)) {
		if (type === inputType) {
			const op = offeredOperation('image', 'compress');
			const f = op.inputs.find((x) => x.key === field);
			if (f) values[field] = ctx.getNodeParameter(paramName(op.key, f), i) as string;
		}
	}
	return { values };
}

/** Check Image: the compress request as a dry run (nothing created or charged). */
async function checkImage(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const op = offeredOperation('image', 'check');
	const image = await readImage(ctx, i);
	const values = { ...fieldValues(ctx, op, i, Object.keys(sourceFields)), ...image.values };
	const { body } = await send(ctx, buildRequest(op, await baseUrl(ctx), values, image.upload), i);
	return [{ json: body, pairedItem: { item: i } }];
}

export function failedJob(ctx: Ctx, job: IDataObject, i: number) {
	const e = (job.error ?? {}) as IDataObject;
	const err = apiError(
		ctx,
		Number(e.upstream_status) || 422,
		{ error: e.message ?? 'the job failed', code: e.code ?? 'job_failed', job_id: job.id },
		i,
	);
	err.context.job_id = job.id;
	return err;
}

async function compress(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const op = offeredOperation('image', 'compress');
	const options = ctx.getNodeParameter('options', i, {}) as IDataObject;
	const timeout = Number(options.timeout ?? 300);
	const deadline = Date.now() + timeout * 1000;
	const base = await baseUrl(ctx);

	const image = await readImage(ctx, i);
	const values = { ...fieldValues(ctx, op, i, Object.keys(sourceFields)), ...image.values };
	const req = buildRequest(op, base, values, image.upload);
	const wait = inlineWait(timeout, catalog.limits.maxWait);
	req.qs.wait = wait;
	req.headers['Idempotency-Key'] = idempotencyKey(ctx.getExecutionId(), ctx.getNode().id, i);
	let { status, body: job, headers } = await send(ctx, req, i, (wait + 60) * 1000);

	// 202: not finished within the inline wait; poll the job until it is.
	while (status === 202) {
		if (Date.now() >= deadline) {
			const err = new NodeOperationError(
				ctx.getNode(),
				`Job ${job.id} did not finish within ${timeout} seconds; get it later with Job > Get`,
				{ itemIndex: i },
			);
			err.context.code = 'timeout';
			err.context.job_id = job.id;
			throw err;
		}
		const retryAfter = Number(headers['retry-after']) || 1;
		await sleep(Math.min(retryAfter * 1000, Math.max(0, deadline - Date.now())));
		({ status, body: job, headers } = await send(
			ctx,
			{
				method: 'GET',
				url: `${base}/v1/jobs/${encodeURIComponent(String(job.id))}`,
				qs: { poll: 1 },
				headers: {},
			},
			i,
		));
	}
	if (job.status === 'failed') throw failedJob(ctx, job, i);
	return [await withFile(ctx, i, base, job, options.download !== false, options)];
}

/** The job as JSON, and its compressed file in a binary field when asked. */
export async function withFile(
	ctx: Ctx,
	i: number,
	base: string,
	job: IDataObject,
	wantFile: boolean,
	options: IDataObject,
): Promise<INodeExecutionData> {
	const item: INodeExecutionData = { json: job, pairedItem: { item: i } };
	if (!wantFile || job.status !== 'completed') return item;
	const result = (job.result ?? {}) as IDataObject;
	const data = await download(ctx, base, String(job.id), i);
	const prop = String(options.outputBinaryPropertyName || 'data');
	const input = ctx.getInputData()[i]?.binary ?? {};
	item.binary = {
		...input,
		[prop]: await ctx.helpers.prepareBinaryData(
			data,
			String(result.filename || `${job.id}`),
			String(result.mime_type || 'application/octet-stream'),
		),
	};
	return item;
}

async function getJob(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const op = offeredOperation('job', 'get');
	const options = ctx.getNodeParameter('options', i, {}) as IDataObject;
	const base = await baseUrl(ctx);
	const { body } = await send(ctx, buildRequest(op, base, fieldValues(ctx, op, i)), i);
	return [await withFile(ctx, i, base, body, options.download === true, options)];
}

async function getMany(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const op = offeredOperation('job', 'getMany');
	const returnAll = ctx.getNodeParameter('returnAll', i) as boolean;
	const limit = returnAll ? Infinity : (ctx.getNodeParameter('limit', i) as number);
	const base = await baseUrl(ctx);
	const values = fieldValues(ctx, op, i);
	const out: INodeExecutionData[] = [];
	let cursor = '';
	do {
		const req = buildRequest(op, base, values);
		req.qs.limit = Math.min(100, limit - out.length);
		if (cursor) req.qs.cursor = cursor;
		const { body } = await send(ctx, req, i);
		for (const job of (body.jobs ?? []) as IDataObject[]) {
			if (out.length < limit) out.push({ json: job, pairedItem: { item: i } });
		}
		cursor = String(body.next_cursor ?? '');
	} while (cursor && out.length < limit);
	return out;
}

/**
 * Validate reads the image as Compress would and checks what the API
 * checks first (type by its bytes, size against the account's limit, a
 * credit left), without making a job.
 */
async function validate(ctx: Ctx, i: number): Promise<INodeExecutionData[]> {
	const base = await baseUrl(ctx);
	const image = await readImage(ctx, i);
	let data: Buffer;
	if (image.upload?.data) {
		data = image.upload.data;
	} else if (image.upload?.stream) {
		data = await ctx.helpers.binaryToBuffer(image.upload.stream);
	} else if (image.values.image_url) {
		const fetched = (await ctx.helpers.httpRequest({
			method: 'GET',
			url: String(image.values.image_url),
			encoding: 'arraybuffer',
			timeout: 60_000,
		})) as ArrayBuffer;
		data = Buffer.from(fetched);
	} else {
		const text = String(image.values.image_base64 ?? '').replace(/^data:[^,]*,/, '');
		data = Buffer.from(text, 'base64');
	}
	const { body: account } = await send(ctx, buildRequest(offeredOperation('account', 'get'), base, {}), i);
	const max = Number(account.max_image_size) || catalog.limits.maxImageSize;
	const credits = Number(account.credits_remaining ?? 0);
	const mimeType = sniffImageType(data);
	const problems: string[] = [];
	if (data.length === 0) problems.push('the image is empty');
	else if (!mimeType) problems.push('the image is not a PNG, JPEG, WebP, AVIF or HEIC file');
	if (data.length > max) problems.push(`the image is ${data.length} bytes, over the limit of ${max}`);
	if (credits <= 0) problems.push('the account has no credits left');
	return [
		{
			json: {
				valid: problems.length === 0,
				problems,
				mime_type: mimeType ?? null,
				size: data.length,
				max_image_size: max,
				credits_remaining: credits,
			},
			pairedItem: { item: i },
		},
	];
}
