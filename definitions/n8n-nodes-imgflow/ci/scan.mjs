// Runs @n8n/scan-community-package's analyzer offline: the same ESLint rule
// set it applies to a published package (its analyzePackage), on the packed
// tarball's compiled files and on the package's TypeScript sources. Only the
// registry download and the provenance check of `npx @n8n/scan-community-package
// NAME` are left out (they need the package published).
//
//   node ci/scan.mjs PACKAGE.tgz SOURCE_DIR
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { analyzePackage, SOURCE_FILE_PATTERNS } from '@n8n/scan-community-package/scanner/scanner.mjs';

const [tarball, sourceDir] = process.argv.slice(2);
if (!tarball || !sourceDir) {
	console.error('usage: node ci/scan.mjs PACKAGE.tgz SOURCE_DIR');
	process.exit(2);
}
const unpacked = fs.mkdtempSync(path.join(os.tmpdir(), 'imgflow-scan-'));
execFileSync('tar', ['-xzf', path.resolve(tarball), '-C', unpacked, '--strip-components=1']);

let failed = 0;
for (const [label, dir, patterns] of [
	['tarball (compiled .js and package.json)', unpacked, ['**/*.js', 'package.json']],
	['sources (.ts, .json)', path.resolve(sourceDir), SOURCE_FILE_PATTERNS],
]) {
	const result = await analyzePackage(dir, patterns);
	if (result.passed) {
		console.log(`PASS scan ${label}${result.message ? `: ${result.message}` : ''}`);
	} else {
		failed++;
		console.log(`FAIL scan ${label}: ${result.message}`);
		if (result.details) console.log(result.details);
	}
}
// The rules must be able to fail: the same tarball with a runtime
// dependency (which n8n Cloud refuses) is rejected.
const pkgPath = path.join(unpacked, 'package.json');
const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8'));
pkg.dependencies = { lodash: '^4.17.21' };
fs.writeFileSync(pkgPath, JSON.stringify(pkg, null, 2));
const broken = await analyzePackage(unpacked, ['package.json']);
if (broken.passed || !String(broken.details).includes('no-runtime-dependencies')) {
	failed++;
	console.log('FAIL scan broken copy: a tarball with a runtime dependency was not rejected');
} else {
	console.log('PASS scan broken copy: a runtime dependency is rejected (no-runtime-dependencies)');
}
fs.rmSync(unpacked, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
