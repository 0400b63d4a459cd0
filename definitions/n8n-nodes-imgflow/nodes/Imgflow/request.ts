import { createHash } from 'crypto';
import type { IDataObject, IExecuteFunctions, IHttpRequestMethods } from 'n8n-workflow';

import type { CatalogOperation } from './catalog';

// Pure request building, kept apart from n8n's execution context so the unit
// tests (test/request.test.js) check exactly what goes on the wire.

/**
 * A stream of n8n's binary data store: Node's Readable, named through n8n's
 * own types (a community node imports no module but n8n-workflow).
 */
export type BinaryStream = Awaited<ReturnType<IExecuteFunctions['helpers']['getBinaryStream']>>;

export interface ApiRequest {
	method: IHttpRequestMethods;
	url: string;
	qs: IDataObject;
	headers: IDataObject;
	body?: IDataObject | Buffer | BinaryStream;
}

/**
 * An image the node uploads: in memory (data), sent as the file part of a
 * multipart job request; or as a stream from n8n's binary data store
 * (filesystem or S3 mode) with its size, sent as the request body itself,
 * so the image never sits in the node's memory.
 */
export interface Upload {
	data?: Buffer;
	stream?: BinaryStream;
	size?: number;
	fileName: string;
	mimeType: string;
}

export function trimBase(baseUrl: string): string {
	return baseUrl.trim().replace(/\/+$/, '');
}

function isEmpty(v: unknown): boolean {
	return v === undefined || v === null || v === '';
}

/**
 * A request for a catalog operation: path fields fill the placeholders,
 * query fields and the operation's fixed query go in the query string, body
 * fields in a JSON body (or, with an upload, in multipart text parts).
 * values holds the API's field names; empty values are left out.
 */
export function buildRequest(
	op: CatalogOperation,
	baseUrl: string,
	values: IDataObject,
	upload?: Upload,
	boundary?: string,
): ApiRequest {
	let path = op.path;
	const qs: IDataObject = { ...op.query };
	const body: IDataObject = {};
	for (const field of op.inputs) {
		const v = values[field.key];
		if (field.in === 'path') {
			if (isEmpty(v)) throw new Error(`${field.label} is required`);
			path = path.replace(`{${field.key}}`, encodeURIComponent(String(v)));
			continue;
		}
		if (isEmpty(v)) continue;
		if (field.in === 'query') qs[field.key] = v as string;
		else body[field.key] = field.type === 'object' ? parseObject(field.label, v) : v;
	}
	const req: ApiRequest = { method: op.method, url: trimBase(baseUrl) + path, qs, headers: {} };
	if (op.method === 'GET' || op.method === 'DELETE') return req;
	if (upload?.stream) {
		// The image is the body; the other fields go in the query, as the
		// API takes them with a raw body (objects as JSON text). The bytes
		// name their own type: the API reads it from them.
		for (const [name, value] of Object.entries(body)) {
			qs[name] = typeof value === 'object' ? JSON.stringify(value) : String(value);
		}
		if (!('filename' in qs) && upload.fileName) qs.filename = upload.fileName;
		req.body = upload.stream;
		req.headers['Content-Type'] = 'application/octet-stream';
		if (upload.size !== undefined) req.headers['Content-Length'] = String(upload.size);
	} else if (upload?.data) {
		const b = boundary ?? `----imgflow${createHash('sha256').update(upload.data).digest('hex').slice(0, 24)}`;
		req.body = multipart(b, body, { ...upload, data: upload.data });
		req.headers['Content-Type'] = `multipart/form-data; boundary=${b}`;
	} else {
		req.body = body;
		req.headers['Content-Type'] = 'application/json';
	}
	return req;
}

/** A JSON object field (metadata) from a JSON string or an object. */
export function parseObject(label: string, v: unknown): IDataObject {
	if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as IDataObject;
	if (typeof v === 'string') {
		try {
			const parsed: unknown = JSON.parse(v);
			if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
				return parsed as IDataObject;
			}
		} catch {
			// reported below with the field's name
		}
	}
	throw new Error(`${label} must be a JSON object, such as {"record_id": "rec_1"}`);
}

function quoteName(s: string): string {
	return s.replace(/[\r\n"\\]/g, (c) => (c === '"' ? '%22' : c === '\\' ? '\\\\' : ' '));
}

/**
 * A multipart/form-data body: one text part per field (objects as JSON),
 * then the file part "file" with its name and type.
 */
export function multipart(boundary: string, fields: IDataObject, upload: Upload & { data: Buffer }): Buffer {
	const parts: Buffer[] = [];
	for (const [name, value] of Object.entries(fields)) {
		const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
		parts.push(
			Buffer.from(
				`--${boundary}\r\nContent-Disposition: form-data; name="${quoteName(name)}"\r\n\r\n${text}\r\n`,
			),
		);
	}
	parts.push(
		Buffer.from(
			`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${quoteName(upload.fileName)}"\r\n` +
				`Content-Type: ${upload.mimeType || 'application/octet-stream'}\r\n\r\n`,
		),
	);
	parts.push(upload.data);
	parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
	return Buffer.concat(parts);
}

/**
 * The Idempotency-Key of one item's job: the same execution, node and item
 * give the same key, so n8n's Retry On Fail (or a resent request) finds the
 * job made the first time instead of paying for a second one.
 */
export function idempotencyKey(executionId: string, nodeId: string, itemIndex: number): string {
	return `n8n-${executionId}-${nodeId}-${itemIndex}`;
}

/** The seconds to wait inline: never past the timeout, at most maxWait. */
export function inlineWait(timeoutSeconds: number, maxWait: number): number {
	return Math.max(0, Math.min(maxWait, Math.floor(timeoutSeconds)));
}

/** The image types the API takes, by their first bytes (HEIC/HEIF: imgflow converts them first). */
export function sniffImageType(data: Buffer): string | undefined {
	if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
		return 'image/png';
	}
	if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
	if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP') {
		return 'image/webp';
	}
	if (data.length >= 12 && data.toString('latin1', 4, 8) === 'ftyp') {
		const brand = data.toString('latin1', 8, 12);
		if (brand === 'avif' || brand === 'avis') return 'image/avif';
		if (['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx'].includes(brand)) return 'image/heic';
		if (brand === 'mif1' || brand === 'msf1') return 'image/heif';
	}
	return undefined;
}
