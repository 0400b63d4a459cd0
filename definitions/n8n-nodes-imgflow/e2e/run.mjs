// The real-n8n run of n8n-nodes-imgflow: a live `imgflow dev` (embedded
// Redis, the reference upstream) and a pinned n8n with the packed package
// installed as a community package, both on loopback ports of this machine.
//
//   node e2e/run.mjs N8N_DIR TARBALL REPO_ROOT IMGFLOW_BINARY
//
// 1. n8n execute runs the compress workflow (e2e/workflows.mjs): binary in
//    and out, URL in, a broken image with Continue On Fail, credits down by
//    exactly the jobs made, Compress Many, Make Image Sizes (an item per
//    size); its Code nodes throw when a check fails.
// 1b. a 9 MiB image in filesystem binary mode, compressed by the node
//    streaming it both ways; the n8n process's peak memory (VmHWM) is
//    printed beside that of the same run with a small image.
//    IMGFLOW_N8N_ONLY=memory runs just this step.
// 2. n8n start: the trigger workflow is activated through n8n's REST API, so
//    the node subscribes with POST /v1/hooks; badly signed and stale
//    deliveries get 401 and start nothing; a job made through the API starts
//    the workflow with job.completed; deactivating removes the hook.
// 2b. n8n's MCP Client node calls imgflow's MCP server (compress_image by
//    URL) and downloads the file of its resource_link, where that n8n
//    release has the node.
// 3. the templates of definitions/n8n (built-in nodes only): compress and
//    wait (n8n execute), the job-finished webhook verifying signatures, and
//    compress with a callback resuming a Wait node (n8n start).
// Prints "N passed, N failed" at the end; exits non-zero on any failure.
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import zlib from 'node:zlib';

import { bigWorkflow, compressWorkflow, mcpClientWorkflow, triggerWorkflow } from './workflows.mjs';

const [n8nDir, tarball, repo, bin] = process.argv.slice(2);
if (!n8nDir || !tarball || !repo || !bin) {
	console.error('usage: node e2e/run.mjs N8N_DIR TARBALL REPO_ROOT IMGFLOW_BINARY');
	process.exit(2);
}
const long = process.env.IMGFLOW_N8N_PROFILE === 'long';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'imgflow-n8n-e2e-'));
const children = [];
let passed = 0;
let failed = 0;
const pass = (m) => {
	passed++;
	console.log(`PASS ${m}`);
};
const fail = (m) => {
	failed++;
	console.log(`FAIL ${m}`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const elapsed = (t) => `${((Date.now() - t) / 1000).toFixed(1)} s`;

function freePort() {
	return new Promise((resolve, reject) => {
		const s = net.createServer();
		s.once('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});
}

// reservePort is freePort for a port a server takes minutes later: it
// stays bound until release, so that nothing else started meanwhile (an
// ephemeral listener of imgflow dev, an outgoing connection) takes it.
function reservePort() {
	return new Promise((resolve, reject) => {
		const s = net.createServer();
		s.once('error', reject);
		s.listen(0, '127.0.0.1', () => resolve({ port: s.address().port, release: () => new Promise((r) => s.close(r)) }));
	});
}

function start(name, cmd, args, env, logFile) {
	const log = fs.openSync(logFile, 'a');
	const child = spawn(cmd, args, { env, stdio: ['ignore', log, log], detached: true });
	child.name = name;
	children.push(child);
	return child;
}

function stopAll() {
	for (const c of children) {
		if (c.exitCode === null) {
			try {
				process.kill(-c.pid, 'SIGTERM');
			} catch {
				// already gone
			}
		}
	}
}
process.on('exit', stopAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));

async function waitFor(what, fn, timeoutMs) {
	const t = Date.now();
	let last;
	while (Date.now() - t < timeoutMs) {
		try {
			const v = await fn();
			if (v) return v;
		} catch (err) {
			last = err;
		}
		await sleep(500);
	}
	throw new Error(`${what}: not within ${timeoutMs / 1000} s${last ? ` (${last.message})` : ''}`);
}

async function api(base, key, method, p, body, headers = {}) {
	const res = await fetch(base + p, {
		method,
		headers: { 'X-API-Key': key, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
		body: body ? JSON.stringify(body) : undefined,
	});
	const text = await res.text();
	let json;
	try {
		json = text ? JSON.parse(text) : {};
	} catch {
		json = { text };
	}
	return { status: res.status, json, headers: res.headers };
}

// noisePNG is a valid RGB PNG of random pixels, stored without compression
// (deflate level 0): width × height × 3 bytes, which no codec can shrink
// much, so the image reaches the size under test.
function noisePNG(width, height) {
	const raw = Buffer.alloc((width * 3 + 1) * height);
	crypto.randomFillSync(raw);
	for (let y = 0; y < height; y++) raw[y * (width * 3 + 1)] = 0; // filter: none
	const crcTable = Array.from({ length: 256 }, (_, n) => {
		let c = n;
		for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
		return c >>> 0;
	});
	const crc = (buf) => {
		let c = 0xffffffff;
		for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
		return (c ^ 0xffffffff) >>> 0;
	};
	const chunk = (type, data) => {
		const head = Buffer.alloc(8);
		head.writeUInt32BE(data.length, 0);
		head.write(type, 4, 'latin1');
		const sum = Buffer.alloc(4);
		sum.writeUInt32BE(crc(Buffer.concat([head.subarray(4), data])), 0);
		return Buffer.concat([head, data, sum]);
	};
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(width, 0);
	ihdr.writeUInt32BE(height, 4);
	ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
	return Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk('IHDR', ihdr),
		chunk('IDAT', zlib.deflateSync(raw, { level: 0 })),
		chunk('IEND', Buffer.alloc(0)),
	]);
}

// disabledModules lists the wanted modules this n8n knows: n8n refuses to
// start (UnknownModuleError, fatal) when N8N_DISABLED_MODULES names one it
// does not, and older releases (2.8) lack most of them.
function disabledModules(dir, wanted) {
	try {
		const req = createRequire(path.join(dir, 'node_modules', 'n8n', 'package.json'));
		const known = req('@n8n/backend-common/dist/modules/modules.config.js').MODULE_NAMES;
		if (Array.isArray(known)) return wanted.filter((m) => known.includes(m)).join(',');
	} catch {
		// a layout this script does not know: name them all, as for the newest
	}
	return wanted.join(',');
}

function tail(file, n = 40) {
	try {
		return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
	} catch {
		return '';
	}
}

// reportListener listens on 127.0.0.1:port (0: any free port) for the
// Report nodes the test adds after a template's last step; reports holds
// each POSTed body, parsed.
async function reportListener(port) {
	const reports = [];
	const server = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			try {
				reports.push(JSON.parse(body));
			} catch {
				reports.push({ raw: body });
			}
			res.writeHead(200, { 'Content-Type': 'application/json' });
			res.end('{}');
		});
	});
	await new Promise((r) => server.listen(port, '127.0.0.1', r));
	return { reports, server };
}

async function main() {
	const t0 = Date.now();
	const n8nVersion = JSON.parse(fs.readFileSync(path.join(n8nDir, 'node_modules', 'n8n', 'package.json'), 'utf8')).version;
	console.log(`n8n ${n8nVersion} (${n8nDir})`);
	// n8n's port is held until n8n starts: its workflows' webhook URLs
	// name it long before (a port taken meanwhile answered /healthz for n8n).
	const n8nHold = await reservePort();
	const n8nPort = n8nHold.port;
	const [apiPort, upstreamPort, brokerPort, reportPort, callbackReportPort] = await Promise.all([
		freePort(),
		freePort(),
		freePort(),
		freePort(),
		freePort(),
	]);
	const key = `e2e_${crypto.randomBytes(12).toString('hex')}`;
	const imgflowUrl = `http://127.0.0.1:${apiPort}`;

	// imgflow dev: its own embedded Redis (REDIS_URL is dropped so the
	// shared one is never touched), loopback URLs allowed.
	const imgflowEnv = { ...process.env };
	delete imgflowEnv.REDIS_URL;
	// The workflows compress the same samples as binary, by URL and mixed,
	// and check one credit per completed job: content dedupe would
	// make the repeats free.
	imgflowEnv.IMGFLOW_DEDUPE = 'off';
	start(
		'imgflow',
		bin,
		['dev', '--addr', `127.0.0.1:${apiPort}`, '--upstream-addr', `127.0.0.1:${upstreamPort}`, '--demo-key', key],
		imgflowEnv,
		path.join(tmp, 'imgflow.log'),
	);
	await waitFor('imgflow dev /health', async () => (await fetch(`${imgflowUrl}/health`)).ok, 60_000);
	console.log(`imgflow dev on ${imgflowUrl} (${elapsed(t0)})`);

	// n8n's home: the packed package installed as a community package
	// (~/.n8n/nodes/node_modules/n8n-nodes-imgflow), images to read.
	const home = path.join(tmp, 'n8n');
	const pkgDir = path.join(home, '.n8n', 'nodes', 'node_modules', 'n8n-nodes-imgflow');
	fs.mkdirSync(pkgDir, { recursive: true });
	execFileSync('tar', ['-xzf', path.resolve(tarball), '-C', pkgDir, '--strip-components=1']);
	fs.writeFileSync(
		path.join(home, '.n8n', 'nodes', 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true, dependencies: { 'n8n-nodes-imgflow': '0.1.0' } }),
	);
	const files = path.join(tmp, 'files');
	const images = path.join(files, 'images');
	const mixed = path.join(files, 'mixed');
	fs.mkdirSync(images, { recursive: true });
	fs.mkdirSync(mixed, { recursive: true });
	const fixtures = path.join(repo, 'fixtures', 'images');
	const good = long
		? ['photo.png', 'photo.jpg', 'photo.webp', 'screenshot.png', 'screenshot.jpg', 'screenshot.webp', 'alpha.png']
		: ['photo.png', 'photo.jpg', 'screenshot.webp'];
	for (const f of good) fs.copyFileSync(path.join(fixtures, f), path.join(images, f));
	for (const f of ['not-an-image.png', 'screenshot.png']) fs.copyFileSync(path.join(fixtures, f), path.join(mixed, f));
	const sampleUrls = (long ? ['photo.png', 'photo.jpg', 'photo.webp', 'screenshot.png'] : ['photo.jpg', 'screenshot.png']).map(
		(f) => `${imgflowUrl}/samples/${f}`,
	);

	const n8nBin = path.join(n8nDir, 'node_modules', '.bin', 'n8n');
	const n8nEnv = {
		PATH: process.env.PATH,
		HOME: home,
		N8N_USER_FOLDER: home,
		N8N_ENCRYPTION_KEY: 'imgflow-e2e-encryption-key-0123456789',
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_HOST: '127.0.0.1',
		N8N_PORT: String(n8nPort),
		N8N_PROTOCOL: 'http',
		WEBHOOK_URL: `http://127.0.0.1:${n8nPort}/`,
		N8N_SECURE_COOKIE: 'false',
		DB_TYPE: 'sqlite',
		// No outside requests: telemetry, version checks, templates, the
		// community package catalogue, AI features, the license server.
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_AI_ENABLED: 'false',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		N8N_VERIFIED_PACKAGES_ENABLED: 'false',
		N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
		N8N_LICENSE_AUTO_RENEW_ENABLED: 'false',
		EXTERNAL_FRONTEND_HOOKS_URLS: '',
		N8N_DIAGNOSTICS_CONFIG_FRONTEND: '',
		N8N_DIAGNOSTICS_CONFIG_BACKEND: '',
		N8N_PUBLIC_API_DISABLED: 'true',
		// Modules that fetch catalogues from n8n's servers at start.
		N8N_DISABLED_MODULES: disabledModules(n8nDir, ['mcp-registry', 'instance-ai', 'n8n-packages', 'insights']),
		// Task runner (Code node) on a free loopback port.
		N8N_RUNNERS_MODE: 'internal',
		N8N_RUNNERS_BROKER_PORT: String(brokerPort),
		N8N_RUNNERS_BROKER_LISTEN_ADDRESS: '127.0.0.1',
		N8N_RESTRICT_FILE_ACCESS_TO: files,
		N8N_BLOCK_ENV_ACCESS_IN_NODE: 'true',
		// NODE_FUNCTION_ALLOW_BUILTIN (the webhook templates' Code node needs
		// crypto) is set below from the templates' own Setup note, as a user
		// following it would.
		N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem',
		N8N_LOG_LEVEL: 'warn',
		N8N_LOG_OUTPUT: 'file',
		N8N_LOG_FILE_LOCATION: path.join(tmp, 'n8n-events.log'),
		NODE_ENV: 'production',
	};
	const n8n = (args, opts = {}) =>
		execFileSync(n8nBin, args, { env: n8nEnv, encoding: 'utf8', maxBuffer: 256 << 20, ...opts });

	fs.writeFileSync(
		path.join(tmp, 'credentials.json'),
		JSON.stringify([
			{ id: 'imgflowE2E', name: 'imgflow (e2e)', type: 'imgflowApi', data: { baseUrl: imgflowUrl, apiKey: key } },
			// The built-in-node templates' Header Auth credential.
			{ id: 'imgflowApiKey', name: 'imgflow API key (X-API-Key)', type: 'httpHeaderAuth', data: { name: 'X-API-Key', value: key } },
			// The MCP Client node's: the key as a bearer token.
			{ id: 'imgflowBearer', name: 'imgflow key (Bearer, e2e)', type: 'httpBearerAuth', data: { token: key } },
		]),
	);
	const bigDir = path.join(files, 'big');
	const smallDir = path.join(files, 'small');
	fs.mkdirSync(bigDir, { recursive: true });
	fs.mkdirSync(smallDir, { recursive: true });
	const bigImage = noisePNG(1780, 1780); // 9.1 MiB
	fs.writeFileSync(path.join(bigDir, 'big.png'), bigImage);
	fs.copyFileSync(path.join(fixtures, 'photo.png'), path.join(smallDir, 'photo.png'));
	const big = bigWorkflow({ bigDir, size: bigImage.length });
	const small = { ...bigWorkflow({ bigDir: smallDir, size: fs.statSync(path.join(smallDir, 'photo.png')).size }), id: 'imgflowE2ESmall' };
	const compress = compressWorkflow({ imagesDir: images, mixedDir: mixed, sampleUrls });
	const trigger = triggerWorkflow({ reportUrl: `http://127.0.0.1:${reportPort}/report` });
	fs.writeFileSync(path.join(tmp, 'compress.json'), JSON.stringify(compress));
	fs.writeFileSync(path.join(tmp, 'trigger.json'), JSON.stringify(trigger));
	// The built-in-node templates (definitions/n8n), rendered for this server.
	const defs = path.join(tmp, 'definitions');
	execFileSync(bin, ['definitions', '--out', defs, '--base-url', imgflowUrl], { stdio: 'ignore' });
	const template = (file) => JSON.parse(fs.readFileSync(path.join(defs, 'n8n', file), 'utf8'));
	// A default self-hosted n8n refuses require('crypto'): each webhook
	// template's Setup note says what to set; n8n runs with exactly that.
	for (const file of ['job-finished-webhook.json', 'credits-low-webhook.json', 'batch-finished-webhook.json']) {
		const note = template(file).nodes.find((n) => n.type === 'n8n-nodes-base.stickyNote')?.parameters.content ?? '';
		const m = /`(NODE_FUNCTION_ALLOW_BUILTIN)=([^`\s]+)`/.exec(note);
		if (!m) {
			fail(`template ${file}: its Setup note does not say how to allow crypto on self-hosted n8n (NODE_FUNCTION_ALLOW_BUILTIN)`);
			continue;
		}
		if (n8nEnv[m[1]] && n8nEnv[m[1]] !== m[2]) fail(`template ${file} says ${m[1]}=${m[2]}, another says ${n8nEnv[m[1]]}`);
		n8nEnv[m[1]] = m[2];
	}
	if (n8nEnv.NODE_FUNCTION_ALLOW_BUILTIN) pass(`webhook templates' Setup note: n8n runs with NODE_FUNCTION_ALLOW_BUILTIN=${n8nEnv.NODE_FUNCTION_ALLOW_BUILTIN} as it says`);
	const waitTpl = template('compress-image-wait.json');
	waitTpl.id = 'imgflowTemplateWait';
	waitTpl.nodes.find((n) => n.name === 'Read Image').parameters.fileSelector = path.join(images, 'photo.jpg');
	fs.writeFileSync(path.join(tmp, 'template-wait.json'), JSON.stringify(waitTpl));

	// n8n's MCP Client node against imgflow's /mcp, where this n8n has it
	// (checked on 2.40; older releases with the node are not run until
	// verified: their MCP SDK and node versions differ).
	const [major, minor] = n8nVersion.split('.').map(Number);
	const hasMcpClient =
		(major > 2 || (major === 2 && minor >= 40)) &&
		fs.existsSync(path.join(n8nDir, 'node_modules', '@n8n', 'n8n-nodes-langchain', 'dist', 'nodes', 'mcp', 'McpClient', 'McpClient.node.js'));
	const mcpWorkflow = mcpClientWorkflow({ mcpUrl: `${imgflowUrl}/mcp`, imageUrl: `${imgflowUrl}/samples/photo.png` });
	fs.writeFileSync(path.join(tmp, 'mcp.json'), JSON.stringify(mcpWorkflow));

	let t = Date.now();
	n8n(['import:credentials', `--input=${path.join(tmp, 'credentials.json')}`]);
	if (hasMcpClient) n8n(['import:workflow', `--input=${path.join(tmp, 'mcp.json')}`]);
	n8n(['import:workflow', `--input=${path.join(tmp, 'template-wait.json')}`]);
	n8n(['import:workflow', `--input=${path.join(tmp, 'compress.json')}`]);
	for (const w of [big, small]) {
		fs.writeFileSync(path.join(tmp, `${w.id}.json`), JSON.stringify(w));
		n8n(['import:workflow', `--input=${path.join(tmp, `${w.id}.json`)}`]);
	}
	n8n(['import:workflow', `--input=${path.join(tmp, 'trigger.json')}`]);
	console.log(`n8n: credential and workflows imported (${elapsed(t)})`);

	// 1b. The 9 MiB image, and the same workflow with a small one: the
	// difference in the n8n process's peak memory is what the image costs.
	const runPeak = async (w) => {
		const log = path.join(tmp, `execute-${w.id}.log`);
		const child = spawn(n8nBin, ['execute', `--id=${w.id}`, '--rawOutput'], {
			env: { ...n8nEnv, N8N_LOG_LEVEL: 'info', N8N_LOG_FILE_LOCATION: log },
			stdio: 'ignore',
		});
		let peak = 0;
		const timer = setInterval(() => {
			try {
				const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'));
				if (m) peak = Math.max(peak, Number(m[1]));
			} catch {
				// exited
			}
		}, 20);
		const code = await new Promise((r) => child.on('exit', r));
		clearInterval(timer);
		const line = fs
			.readFileSync(log, 'utf8')
			.split('\n')
			.map((l) => {
				try {
					return JSON.parse(l).message;
				} catch {
					return '';
				}
			})
			.find((m) => typeof m === 'string' && m.includes('"resultData"'));
		const result = line && JSON.parse(line).data.resultData;
		return { code, peakMiB: peak / 1024, check: result?.runData?.['Check Big']?.[0]?.data?.main?.[0]?.[0]?.json, error: result?.error };
	};
	t = Date.now();
	const smallRun = await runPeak(small);
	const bigRun = await runPeak(big);
	if (bigRun.check?.ok && smallRun.check?.ok) {
		pass(
			`9 MiB image in filesystem mode (${elapsed(t)}): ${bigRun.check.original} -> ${bigRun.check.compressed} bytes, streamed in and out; ` +
				`n8n peak RSS ${bigRun.peakMiB.toFixed(0)} MiB vs ${smallRun.peakMiB.toFixed(0)} MiB with a ${(fs.statSync(path.join(smallDir, 'photo.png')).size / 1024).toFixed(0)} KiB image ` +
				`(+${(bigRun.peakMiB - smallRun.peakMiB).toFixed(1)} MiB for ${(bigImage.length / 1048576).toFixed(1)} MiB)`,
		);
	} else {
		fail(`9 MiB image in filesystem mode: ${JSON.stringify({ big: bigRun, small: smallRun }).slice(0, 3000)}`);
	}
	if (process.env.IMGFLOW_N8N_ONLY === 'memory') return;

	// 1. The compress workflow, headless.
	t = Date.now();
	let out;
	try {
		// execute hands the run's JSON to n8n's logger (level info): one
		// line of its JSON log file.
		n8n(['execute', `--id=${compress.id}`, '--rawOutput'], {
			stdio: ['ignore', 'pipe', 'pipe'],
			env: { ...n8nEnv, N8N_LOG_LEVEL: 'info', N8N_LOG_FILE_LOCATION: path.join(tmp, 'execute.log') },
		});
		out = fs
			.readFileSync(path.join(tmp, 'execute.log'), 'utf8')
			.split('\n')
			.map((l) => {
				try {
					return JSON.parse(l).message;
				} catch {
					return '';
				}
			})
			.find((m) => typeof m === 'string' && m.startsWith('{') && m.includes('"resultData"'));
		if (!out) throw new Error('n8n execute logged no run data');
	} catch (err) {
		const logged = tail(path.join(tmp, 'execute.log'), 400)
			.split('\n')
			.filter((l) => /"level":"(error|warn)"|Error|error/.test(l))
			.join('\n');
		fail(`n8n execute of the compress workflow failed (${elapsed(t)}): ${err.message.split('\n')[0]}\n${logged.slice(-6000)}`);
		console.log(tail(path.join(tmp, 'n8n-events.log')));
		return;
	}
	const run = JSON.parse(out);
	const runData = run.data.resultData.runData;
	const summary = runData['Check Credits']?.[0]?.data?.main?.[0]?.[0]?.json;
	const count = (n) => runData[n]?.[0]?.data?.main?.[0]?.length ?? 0;
	if (summary?.ok) {
		pass(`compress workflow (${elapsed(t)}): Read Files From Disk -> imgflow Compress (binary) -> ${count('Check Binary')} smaller images of the same type and name`);
		pass(`URL input: ${count('Check URL')} images compressed from URLs`);
		pass(`Continue On Fail: not-an-image.png came back as one {error, code: ${summary.error_code}} item, the other item completed`);
		pass(`Get Account: credits ${summary.credits_before} -> ${summary.credits_after}, down by exactly the ${summary.jobs_completed} completed jobs`);
	} else {
		fail(`compress workflow: no summary from Check Credits: ${JSON.stringify(run.data.resultData).slice(0, 3000)}`);
	}
	const jobs = runData['Check Jobs']?.[0]?.data?.main?.[0]?.[0]?.json;
	if (jobs?.fetched === 3) pass(`Get Many Jobs (limit 3, status completed) and Get Job with the file as binary: ${jobs.fetched} jobs`);
	else fail('Get Many Jobs / Get Job: no result from Check Jobs');
	const validated = runData['Check Validate']?.[0]?.data?.main?.[0]?.[0]?.json;
	if (validated?.validated === 2) pass(`Validate: screenshot.png valid, not-an-image.png refused (${validated.invalid.join('; ')}), no credit used`);
	else fail('Validate: no result from Check Validate');
	const many = runData['Check Many']?.[0]?.data?.main?.[0]?.[0]?.json;
	if (runData['Check Many Credits']?.[0]?.data?.main?.[0]?.[0]?.json?.ok) {
		pass(`Compress Many: ${count('Compress Many')} files as one batch (${many.completed} completed, not-an-image.png an error item), an item per file with its file, ${many.charged} credits`);
	} else fail('Compress Many: no result from Check Many Credits');
	const sizes = runData['Check Sizes']?.[0]?.data?.main?.[0]?.[0]?.json;
	// (a Code node sees its input items paired by their own index: the
	// node's pairing is read from the run data)
	const sizeItems = runData['Make Sizes']?.[0]?.data?.main?.[0] ?? [];
	const unpaired = sizeItems.filter((item) => item.pairedItem?.item !== 0);
	if (unpaired.length) fail(`Make Image Sizes: items not paired with the one input item: ${JSON.stringify(unpaired.map((i) => i.pairedItem))}`);
	if (runData['Check Sizes Credits']?.[0]?.data?.main?.[0]?.[0]?.json?.ok) {
		pass(`Make Image Sizes: photo.jpg (a binary file, streamed) -> ${sizes.sizes} items, one per size with its file, the srcset on each (${sizes.srcset.replace(/https?:[^ ]+ /g, '')}), ${sizes.charged} credits`);
	} else fail(`Make Image Sizes: no result from Check Sizes Credits: ${JSON.stringify(run.data.resultData.error ?? {}).slice(0, 2000)}`);

	// n8n's MCP Client node (no LLM) calls compress_image and the file of
	// its resource_link is downloaded.
	if (hasMcpClient) {
		t = Date.now();
		try {
			n8n(['execute', `--id=${mcpWorkflow.id}`, '--rawOutput'], {
				stdio: ['ignore', 'pipe', 'pipe'],
				env: { ...n8nEnv, N8N_LOG_LEVEL: 'info', N8N_LOG_FILE_LOCATION: path.join(tmp, 'execute-mcp.log') },
			});
			const line = fs
				.readFileSync(path.join(tmp, 'execute-mcp.log'), 'utf8')
				.split('\n')
				.map((l) => {
					try {
						return JSON.parse(l).message;
					} catch {
						return '';
					}
				})
				.find((m) => typeof m === 'string' && m.includes('"resultData"'));
			const rd = JSON.parse(line).data.resultData;
			const check = rd.runData['Check MCP']?.[0]?.data?.main?.[0]?.[0]?.json;
			if (check?.ok) {
				pass(`MCP Client node (${elapsed(t)}): compress_image over /mcp, its resource_link downloaded: ${check.original} -> ${check.compressed} bytes of ${check.type}`);
			} else {
				fail(`MCP Client node: ${JSON.stringify(rd.error ?? rd.runData).slice(0, 3000)}`);
			}
		} catch (err) {
			fail(`MCP Client node (${elapsed(t)}): ${err.message.split('\n')[0]}\n${tail(path.join(tmp, 'execute-mcp.log'), 60)}`);
		}
	} else {
		console.log(`SKIP MCP Client node: not run on n8n ${n8nVersion} (verified from 2.40)`);
	}

	// The file-in, file-out template, headless too.
	t = Date.now();
	try {
		n8n(['execute', `--id=${waitTpl.id}`, '--rawOutput'], {
			stdio: ['ignore', 'pipe', 'pipe'],
			env: { ...n8nEnv, N8N_LOG_LEVEL: 'info', N8N_LOG_FILE_LOCATION: path.join(tmp, 'execute-template.log') },
		});
		const line = fs
			.readFileSync(path.join(tmp, 'execute-template.log'), 'utf8')
			.split('\n')
			.map((l) => {
				try {
					return JSON.parse(l).message;
				} catch {
					return '';
				}
			})
			.find((m) => typeof m === 'string' && m.includes('"resultData"'));
		const rd = JSON.parse(line).data.resultData.runData;
		const file = rd.Download?.[0]?.data?.main?.[0]?.[0]?.binary?.data;
		const job = rd['Compress Image']?.[0]?.data?.main?.[0]?.[0]?.json;
		if (file && file.mimeType === 'image/jpeg' && job?.status === 'completed' && !rd['Stop: job not completed']) {
			pass(`template compress-image-wait.json (${elapsed(t)}): multipart upload of the file, If completed, Download as file (${file.fileName}, ${job.result.compressed_size} bytes)`);
		} else {
			fail(`template compress-image-wait.json: ${JSON.stringify({ file, job }).slice(0, 1500)}`);
		}
	} catch (err) {
		const logged = tail(path.join(tmp, 'execute-template.log'), 400)
			.split('\n')
			.filter((l) => /"level":"(error|warn)"|Error|error/.test(l))
			.join('\n');
		fail(`template compress-image-wait.json: n8n execute failed: ${err.message.split('\n')[0]}\n${logged.slice(-4000)}`);
	}

	// The webhook template: subscribed by hand as its Sticky Note says, the
	// secret pasted into Verify Signature; imported now, while n8n is
	// stopped (the CLI and a running n8n share the database). No job is
	// made until n8n runs.
	const tplUrl = `http://127.0.0.1:${n8nPort}/webhook/imgflow-job-finished`;
	const tplHook = await api(imgflowUrl, key, 'POST', '/v1/hooks', { target_url: tplUrl, event: 'job.finished' });
	const hookTpl = template('job-finished-webhook.json');
	hookTpl.id = 'imgflowTemplateWebhook';
	const verifyNode = hookTpl.nodes.find((n) => n.name === 'Verify Signature');
	verifyNode.parameters.jsCode = verifyNode.parameters.jsCode.replace('PASTE-THE-HOOK-SECRET-HERE', tplHook.json.secret);
	fs.writeFileSync(path.join(tmp, 'template-webhook.json'), JSON.stringify(hookTpl));
	n8n(['import:workflow', `--input=${path.join(tmp, 'template-webhook.json')}`]);

	// The callback template, run by the started n8n: its Manual Trigger
	// swapped for a Webhook (a production run, started with a POST; a manual
	// run cannot be started without the editor) and a Report node after
	// Download, so that the test sees the Wait node resumed by imgflow's
	// callback and the file downloaded.
	const callbackTpl = template('compress-image-callback.json');
	callbackTpl.id = 'imgflowTemplateCallback';
	const startNode = callbackTpl.nodes.find((n) => n.name === 'Start');
	Object.assign(startNode, {
		type: 'n8n-nodes-base.webhook',
		typeVersion: 1,
		webhookId: '0d5c7a52-3c43-4a8e-9f0b-7b1e2f6a9c31',
		parameters: { httpMethod: 'POST', path: 'imgflow-e2e-callback-start', responseMode: 'onReceived', options: {} },
	});
	callbackTpl.nodes.find((n) => n.name === 'Read Image').parameters.fileSelector = path.join(images, 'photo.png');
	const downloadNode = callbackTpl.nodes.find((n) => n.name === 'Download');
	callbackTpl.nodes.push({
		id: 'e2e-callback-report',
		name: 'Report',
		type: 'n8n-nodes-base.httpRequest',
		typeVersion: downloadNode.typeVersion,
		position: [downloadNode.position[0] + 240, downloadNode.position[1]],
		parameters: {
			method: 'POST',
			url: `http://127.0.0.1:${callbackReportPort}/report`,
			sendBody: true,
			specifyBody: 'json',
			jsonBody:
				'={{ JSON.stringify({ job: $("Wait for imgflow callback").item.json.body.data, file: $binary.data ? { name: $binary.data.fileName, type: $binary.data.mimeType, size: $binary.data.fileSize } : null }) }}',
			options: {},
		},
	});
	callbackTpl.connections.Download = { main: [[{ node: 'Report', type: 'main', index: 0 }]] };
	fs.writeFileSync(path.join(tmp, 'template-callback.json'), JSON.stringify(callbackTpl));
	n8n(['import:workflow', `--input=${path.join(tmp, 'template-callback.json')}`]);

	// The event templates (Credits Low, Batch Finished): subscribed by hand
	// as their Sticky Notes say, the secret pasted in, and a Report node
	// after their last step, so that the test sees the whole run: the
	// signature verified, then the account read or the archive downloaded.
	const { reports: eventReports, server: eventListener } = await reportListener(0);
	const eventTemplates = [
		{ file: 'credits-low-webhook.json', id: 'imgflowTemplateCreditsLow', path: 'imgflow-credits-low', last: 'Get Account',
			// Threshold 0: the hook never fires during the test (its
			// crossing is the API's, tested in Go); its secret signs the
			// delivery this test sends itself.
			hook: { event: 'account.credits_low', threshold: 0 },
			report: '={{ JSON.stringify({ template: "credits-low", event: $("imgflow Credits Low").item.json.body.type, credits: $json.credits_remaining }) }}' },
		{ file: 'batch-finished-webhook.json', id: 'imgflowTemplateBatchFinished', path: 'imgflow-batch-finished', last: 'Download Archive',
			hook: { event: 'batch.finished' },
			report: '={{ JSON.stringify({ template: "batch-finished", event: $("imgflow Batch Finished").item.json.body.type, batch: $("imgflow Batch Finished").item.json.body.data.id, file: $binary.data ? { name: $binary.data.fileName, type: $binary.data.mimeType, size: $binary.data.fileSize } : null }) }}' },
	];
	for (const e of eventTemplates) {
		e.url = `http://127.0.0.1:${n8nPort}/webhook/${e.path}`;
		const hook = await api(imgflowUrl, key, 'POST', '/v1/hooks', { target_url: e.url, ...e.hook });
		if (hook.status !== 201) throw new Error(`hook for ${e.file}: ${hook.status} ${JSON.stringify(hook.json)}`);
		e.hookId = hook.json.id;
		e.secret = hook.json.secret;
		const tpl = template(e.file);
		tpl.id = e.id;
		const verify = tpl.nodes.find((n) => n.name === 'Verify Signature');
		verify.parameters.jsCode = verify.parameters.jsCode.replace('PASTE-THE-HOOK-SECRET-HERE', hook.json.secret);
		const last = tpl.nodes.find((n) => n.name === e.last);
		tpl.nodes.push({
			id: `e2e-report-${e.path}`,
			name: 'Report',
			type: 'n8n-nodes-base.httpRequest',
			typeVersion: last.typeVersion,
			position: [last.position[0] + 240, last.position[1]],
			parameters: { method: 'POST', url: `http://127.0.0.1:${eventListener.address().port}/report`, sendBody: true, specifyBody: 'json', jsonBody: e.report, options: {} },
		});
		tpl.connections[e.last] = { main: [[{ node: 'Report', type: 'main', index: 0 }]] };
		fs.writeFileSync(path.join(tmp, `${e.id}.json`), JSON.stringify(tpl));
		n8n(['import:workflow', `--input=${path.join(tmp, `${e.id}.json`)}`]);
	}

	// 2. The trigger, in a running n8n.
	const received = [];
	const listener = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => (body += c));
		req.on('end', () => {
			try {
				received.push(JSON.parse(body));
			} catch {
				received.push({ raw: body });
			}
			res.writeHead(200, { 'Content-Type': 'application/json' });
			res.end('{}');
		});
	});
	await new Promise((r) => listener.listen(reportPort, '127.0.0.1', r));
	t = Date.now();
	await n8nHold.release();
	start('n8n', n8nBin, ['start'], n8nEnv, path.join(tmp, 'n8n.log'));
	const n8nUrl = `http://127.0.0.1:${n8nPort}`;
	await waitFor('n8n /healthz', async () => (await fetch(`${n8nUrl}/healthz`)).ok, 240_000);
	console.log(`n8n start: up on ${n8nUrl} (${elapsed(t)})`);

	// The owner account, then the workflow activated as a user would.
	const browser = { 'browser-id': 'imgflow-e2e' };
	// /healthz answers while n8n still starts up ("n8n is starting up"):
	// the owner setup is retried until n8n really answers it.
	const cookie = await waitFor(
		'n8n owner setup',
		async () => {
			const setup = await fetch(`${n8nUrl}/rest/owner/setup`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json', ...browser },
				body: JSON.stringify({ email: 'e2e@imgflow.example.com', firstName: 'E2E', lastName: 'Run', password: 'Imgflow-e2e-1' }),
			});
			const c = (setup.headers.get('set-cookie') || '').split(';')[0];
			return setup.ok && c.startsWith('n8n-auth=') ? c : null;
		},
		120_000,
	);
	console.log(`n8n owner set up (${elapsed(t)})`);
	const rest = async (method, p, body) => {
		const res = await fetch(`${n8nUrl}/rest${p}`, {
			method,
			headers: { Cookie: cookie, 'Content-Type': 'application/json', ...browser },
			body: body ? JSON.stringify(body) : undefined,
		});
		const text = await res.text();
		if (!res.ok) throw new Error(`n8n ${method} /rest${p}: ${res.status} ${text.slice(0, 500)}`);
		return JSON.parse(text).data;
	};
	const wf = await rest('GET', `/workflows/${trigger.id}`);
	await rest('POST', `/workflows/${trigger.id}/activate`, { versionId: wf.versionId });

	const hook = await waitFor(
		'hook subscribed by the trigger',
		async () => {
			const { json } = await api(imgflowUrl, key, 'GET', '/v1/hooks');
			return (json.hooks || []).find((h) => h.target_url.startsWith(`${n8nUrl}/webhook/`) && h.target_url !== tplUrl && !eventTemplates.some((e) => e.url === h.target_url));
		},
		30_000,
	);
	if (hook.event === 'job.completed') pass(`activation subscribed ${hook.target_url} for job.completed (POST /v1/hooks)`);
	else fail(`activation subscribed event ${hook.event}, want job.completed`);

	// Deliveries that do not verify are refused and start nothing.
	const { json: full } = await api(imgflowUrl, key, 'GET', `/v1/hooks/${hook.id}`);
	const fake = JSON.stringify({ type: 'job.completed', timestamp: new Date().toISOString(), data: { id: 'forged', status: 'completed', result: {} } });
	const signed = (ts, secret) => {
		const k = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
		return 'v1,' + crypto.createHmac('sha256', k).update(`msg_forged.${ts}.${fake}`).digest('base64');
	};
	const now = Math.floor(Date.now() / 1000);
	for (const [what, ts, sig] of [
		['a wrong signature', now, signed(now, 'whsec_' + Buffer.from('not the secret').toString('base64'))],
		['a stale timestamp (10 minutes old, correctly signed)', now - 600, signed(now - 600, full.secret)],
		['no signature', now, ''],
	]) {
		const res = await fetch(hook.target_url, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(ts), 'webhook-signature': sig },
			body: fake,
		});
		if (res.status === 401) pass(`a delivery with ${what} is answered 401`);
		else fail(`a delivery with ${what} is answered ${res.status}, want 401`);
	}

	// A job made through the API starts the workflow with job.completed.
	const job = await api(imgflowUrl, key, 'POST', '/v1/jobs?wait=20', { image_url: `${imgflowUrl}/samples/photo.png` });
	if (job.json.status !== 'completed') fail(`job through the API: ${job.status} ${JSON.stringify(job.json)}`);
	const got = await waitFor('the trigger workflow run', async () => received.find((r) => r.id === job.json.id), 60_000).catch((e) => {
		fail(e.message);
		return null;
	});
	if (got) {
		if (got.event === 'job.completed' && got.status === 'completed' && got.file_url) {
			pass(`job ${job.json.id} made through the API started the trigger workflow with job.completed`);
		} else {
			fail(`the trigger workflow received ${JSON.stringify(got)}`);
		}
	}
	if (received.some((r) => r.id === 'forged')) fail('a forged delivery started the workflow');
	else pass('no refused delivery started the workflow');

	// Deactivation removes the hook.
	await rest('POST', `/workflows/${trigger.id}/deactivate`, {});
	const gone = await waitFor(
		'hook removed after deactivation',
		async () => {
			const { json } = await api(imgflowUrl, key, 'GET', '/v1/hooks');
			return !(json.hooks || []).some((h) => h.id === hook.id);
		},
		30_000,
	).catch((e) => {
		fail(e.message);
		return false;
	});
	if (gone) pass('deactivating the workflow deleted the hook (DELETE /v1/hooks/{id})');
	listener.close();

	// The webhook template, activated in the running n8n (imported above).
	const tplWf = await rest('GET', `/workflows/${hookTpl.id}`);
	await rest('POST', `/workflows/${hookTpl.id}/activate`, { versionId: tplWf.versionId });
	// The production webhook is registered shortly after activation (404 until then).
	const forged = await waitFor(
		'the template webhook registered',
		async () => {
			const ts = Math.floor(Date.now() / 1000);
			const res = await fetch(tplUrl, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(ts), 'webhook-signature': signed(ts, 'whsec_' + Buffer.from('nope').toString('base64')) },
				body: fake,
			});
			return res.status === 404 ? null : res;
		},
		30_000,
	);
	if (forged.status === 401) pass('template job-finished-webhook.json answers a badly signed delivery 401');
	else fail(`template job-finished-webhook.json answered a badly signed delivery ${forged.status}, want 401`);
	const job2 = await api(imgflowUrl, key, 'POST', '/v1/jobs?wait=20', { image_url: `${imgflowUrl}/samples/screenshot.png` });
	const accepted = await waitFor(
		'the template accepting the real delivery',
		async () => {
			const { json } = await api(imgflowUrl, key, 'GET', `/v1/jobs/${job2.json.id}/deliveries`);
			const text = JSON.stringify(json);
			return text.includes(tplUrl) && /"status_code":204/.test(text) ? text : null;
		},
		60_000,
	).catch((e) => {
		fail(e.message);
		return null;
	});
	if (accepted) pass(`template job-finished-webhook.json verified imgflow's signed delivery of job ${job2.json.id} and answered 204`);

	// The callback template: upload with callback_url = the resume URL,
	// the Wait node resumed by imgflow's POST, If completed, Download.
	const { reports, server: callbackListener } = await reportListener(callbackReportPort);
	t = Date.now();
	const cbWf = await rest('GET', `/workflows/${callbackTpl.id}`);
	await rest('POST', `/workflows/${callbackTpl.id}/activate`, { versionId: cbWf.versionId });
	await waitFor(
		'the callback template started',
		async () => (await fetch(`${n8nUrl}/webhook/imgflow-e2e-callback-start`, { method: 'POST' })).status !== 404,
		30_000,
	);
	const report = await waitFor('the callback template reaching Download', async () => reports[0], 90_000).catch((e) => {
		fail(`template compress-image-callback.json: ${e.message}\n${tail(path.join(tmp, 'n8n-events.log'), 20)}`);
		return null;
	});
	if (report) {
		const { job: cbJob, file } = report;
		const deliveries = cbJob ? (await api(imgflowUrl, key, 'GET', `/v1/jobs/${cbJob.id}/deliveries`)).json : {};
		const resumed = /webhook-waiting/.test(JSON.stringify(deliveries));
		if (cbJob?.status === 'completed' && file?.type === 'image/png' && file.name === 'photo.png' && resumed) {
			pass(`template compress-image-callback.json (${elapsed(t)}): upload with callback_url, Wait resumed by imgflow's callback to its resume URL, Download as file (${file.name}, ${cbJob.result.compressed_size} bytes)`);
		} else {
			fail(`template compress-image-callback.json: ${JSON.stringify({ report, deliveries }).slice(0, 1500)}`);
		}
	}
	await rest('POST', `/workflows/${callbackTpl.id}/deactivate`, {});
	callbackListener.close();

	// The event templates, activated; a forged delivery is refused, then one
	// image compressed as a batch sends both events (the batch's end, and the
	// balance at or below the hook's threshold).
	for (const e of eventTemplates) {
		const wf = await rest('GET', `/workflows/${e.id}`);
		await rest('POST', `/workflows/${e.id}/activate`, { versionId: wf.versionId });
		const forgedEvent = await waitFor(
			`the ${e.file} webhook registered`,
			async () => {
				const ts = Math.floor(Date.now() / 1000);
				const res = await fetch(e.url, {
					method: 'POST',
					headers: { 'Content-Type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(ts), 'webhook-signature': signed(ts, 'whsec_' + Buffer.from('nope').toString('base64')) },
					body: JSON.stringify({ type: e.hook.event, timestamp: new Date().toISOString(), data: {} }),
				});
				return res.status === 404 ? null : res;
			},
			30_000,
		);
		if (forgedEvent.status === 401) pass(`template ${e.file} answers a badly signed delivery 401`);
		else fail(`template ${e.file} answered a badly signed delivery ${forgedEvent.status}, want 401`);
	}
	t = Date.now();
	// Credits Low: a delivery signed with the hook's secret, as imgflow signs.
	const lowBody = JSON.stringify({ type: 'account.credits_low', timestamp: new Date().toISOString(), data: { credits_remaining: 42, threshold: 50, job_id: 'e2e' } });
	const lowTs = Math.floor(Date.now() / 1000);
	const lowKey = Buffer.from(eventTemplates[0].secret.replace(/^whsec_/, ''), 'base64');
	const lowSig = 'v1,' + crypto.createHmac('sha256', lowKey).update(`msg_e2e_low.${lowTs}.${lowBody}`).digest('base64');
	const lowRes = await fetch(eventTemplates[0].url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', 'webhook-id': 'msg_e2e_low', 'webhook-timestamp': String(lowTs), 'webhook-signature': lowSig },
		body: lowBody,
	});
	if (lowRes.status !== 204) fail(`template credits-low-webhook.json answered a correctly signed delivery ${lowRes.status}, want 204`);
	// Batch Finished: imgflow's own event, at the end of a real batch.
	const batch = await api(imgflowUrl, key, 'POST', '/v1/batches?wait=20', { items: [{ image_url: `${imgflowUrl}/samples/photo.png`, filename: 'e2e-batch.png' }] });
	for (const e of eventTemplates) {
		const got = await waitFor(`the ${e.file} run reaching ${e.last}`, async () => eventReports.find((r) => r.template === e.path.replace('imgflow-', '') && (!r.batch || r.batch === batch.json.id)), 60_000).catch((err) => {
			fail(`template ${e.file}: ${err.message}; batch ${batch.status} ${JSON.stringify(batch.json).slice(0, 300)}\n${tail(path.join(tmp, 'n8n-events.log'), 20)}`);
			return null;
		});
		if (!got) continue;
		if (e.hook.event === 'account.credits_low' && got.event === 'account.credits_low' && Number.isInteger(got.credits)) {
			pass(`template ${e.file} (${elapsed(t)}): verified a signed account.credits_low (204), then Get Account: ${got.credits} credits`);
		} else if (e.hook.event === 'batch.finished' && got.event === 'batch.finished' && got.batch === batch.json.id && got.file?.type === 'application/zip' && got.file.size) {
			pass(`template ${e.file} (${elapsed(t)}): verified imgflow's signed batch.finished of batch ${got.batch}, then Download Archive (${got.file.name}, ${got.file.size})`);
		} else {
			fail(`template ${e.file}: ${JSON.stringify(got).slice(0, 800)}`);
		}
		await rest('POST', `/workflows/${e.id}/deactivate`, {});
		await api(imgflowUrl, key, 'DELETE', `/v1/hooks/${e.hookId}`);
	}
	eventListener.close();
	console.log(`e2e took ${elapsed(t0)}`);
}

try {
	await main();
} catch (err) {
	fail(err.stack || String(err));
	console.log('--- imgflow log ---\n' + tail(path.join(tmp, 'imgflow.log')));
	console.log('--- n8n log ---\n' + tail(path.join(tmp, 'n8n.log')) + '\n' + tail(path.join(tmp, 'n8n-events.log')));
} finally {
	stopAll();
	await sleep(1000);
	if (!process.env.IMGFLOW_N8N_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
	else console.log(`kept ${tmp}`);
}
console.log(`n8n e2e: ${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
