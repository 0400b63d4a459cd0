import type {
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestOptions,
	IN8nHttpFullResponse,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import type { ApiRequest, BinaryStream } from './request';
import { trimBase } from './request';

type Context = IExecuteFunctions | IHookFunctions;

/**
 * The error to report for one item: n8n's own errors as they are (they carry
 * the API code on context.code), anything else wrapped with the item index.
 */
export function nodeError(ctx: Context, error: unknown, itemIndex: number): NodeApiError | NodeOperationError {
	if (error instanceof NodeApiError || error instanceof NodeOperationError) return error;
	const e = error as { context?: IDataObject; message?: string };
	const wrapped = new NodeOperationError(ctx.getNode(), (error as Error) ?? 'unknown error', { itemIndex });
	wrapped.context.code = e.context?.code ?? 'node_error';
	return wrapped;
}

export const CREDENTIAL = 'imgflowApi';

export async function baseUrl(ctx: Context): Promise<string> {
	const creds = await ctx.getCredentials(CREDENTIAL);
	return trimBase(String(creds.baseUrl ?? ''));
}

/**
 * An API error as n8n shows it: the API's message, its machine code (such as
 * insufficient_credits) in the description and on context.code, and the HTTP
 * status.
 */
export function apiError(
	ctx: Context,
	status: number,
	body: IDataObject,
	itemIndex?: number,
): NodeApiError {
	const message = String(body.error ?? body.message ?? `imgflow answered ${status}`);
	const code = String(body.code ?? 'http_' + status);
	const err = new NodeApiError(ctx.getNode(), { ...body, code } as JsonObject, {
		message,
		description: `imgflow error code: ${code}`,
		httpCode: String(status),
		itemIndex,
	});
	err.context.code = code;
	return err;
}

function parseBody(raw: unknown): IDataObject {
	if (raw === undefined || raw === null || raw === '') return {};
	if (Buffer.isBuffer(raw)) raw = raw.toString('utf8');
	if (typeof raw === 'string') {
		try {
			return JSON.parse(raw) as IDataObject;
		} catch {
			return { error: raw.slice(0, 500) };
		}
	}
	return raw as IDataObject;
}

/**
 * Sends one request with the credential's key and answers the status and
 * JSON body; any 4xx or 5xx becomes an apiError (but 404 is answered when
 * acceptNotFound says it is an expected outcome).
 */
export async function send(
	ctx: Context,
	req: ApiRequest,
	itemIndex?: number,
	timeoutMs = 60_000,
	acceptNotFound = false,
): Promise<{ status: number; headers: IDataObject; body: IDataObject }> {
	const options: IHttpRequestOptions = {
		method: req.method,
		url: req.url,
		qs: req.qs,
		headers: req.headers,
		body: req.body as IHttpRequestOptions['body'],
		json: !isBytes(req.body),
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		timeout: timeoutMs,
	};
	const res = (await ctx.helpers.httpRequestWithAuthentication.call(
		ctx,
		CREDENTIAL,
		options,
	)) as IN8nHttpFullResponse;
	const body = parseBody(res.body);
	const notFound = acceptNotFound && res.statusCode === 404;
	if (res.statusCode >= 400 && !notFound) throw apiError(ctx, res.statusCode, body, itemIndex);
	return { status: res.statusCode, headers: res.headers as IDataObject, body };
}

/** A body sent as bytes (multipart, or a stream), not as JSON. */
function isBytes(body: unknown): boolean {
	return Buffer.isBuffer(body) || (typeof body === 'object' && body !== null && typeof (body as BinaryStream).pipe === 'function');
}

/**
 * Downloads a completed job's compressed file with the key, as a stream:
 * prepareBinaryData writes it to n8n's binary data store (a file in
 * filesystem mode) without holding it.
 */
export async function download(
	ctx: IExecuteFunctions,
	base: string,
	jobId: string,
	itemIndex: number,
): Promise<BinaryStream> {
	const res = (await ctx.helpers.httpRequestWithAuthentication.call(ctx, CREDENTIAL, {
		method: 'GET',
		url: `${base}/v1/jobs/${encodeURIComponent(jobId)}/file`,
		encoding: 'stream',
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
		timeout: 120_000,
	})) as IN8nHttpFullResponse;
	const body = res.body as BinaryStream;
	if (res.statusCode >= 400) {
		throw apiError(ctx, res.statusCode, parseBody(await ctx.helpers.binaryToBuffer(body)), itemIndex);
	}
	return body;
}
