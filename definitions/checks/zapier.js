'use strict';
// Validates the Zapier app: zapier-platform-schema's validateAppDefinition on
// the JSON as written, then zapier-platform-core's compile (which turns each
// {"source": ...} into a function) and its own validate command. Then the
// CLI project (index.js + package.json): loaded as `zapier push` would load
// it, core's validate command (what `zapier validate` runs), the core
// version it pins, and the file output's hydrator wired into the app.
const fs = require('fs');
const path = require('path');

module.exports = async function checkZapier(dir) {
  const file = path.join(dir, 'imgflow-zapier-app.json');
  const app = JSON.parse(fs.readFileSync(file, 'utf8'));
  const problems = [];

  const { validateAppDefinition } = require('zapier-platform-schema');
  for (const e of validateAppDefinition(app).errors) {
    problems.push(`schema: ${e.property || ''} ${e.message || e.stack}`);
  }

  // Every {"source": ...} must compile to a function.
  const walk = (v, where) => {
    if (v && typeof v === 'object') {
      if (typeof v.source === 'string') {
        try {
          const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
          new AsyncFunction(...(v.args || ['z', 'bundle']), v.source);
        } catch (err) {
          problems.push(`source at ${where} does not compile: ${err.message}`);
        }
      }
      for (const [k, c] of Object.entries(v)) walk(c, `${where}.${k}`);
    }
  };
  walk(app, 'app');

  process.env.NODE_ENV = process.env.NODE_ENV || 'test';
  const zapier = require('zapier-platform-core');
  const handler = zapier.createAppHandler(JSON.parse(JSON.stringify(app)));
  const result = await handler({ command: 'validate', method: '', bundle: {} }, {});
  const errors = result.results || [];
  for (const e of errors) problems.push(`core validate: ${e.property || ''} ${e.message || JSON.stringify(e)}`);

  // Samples: no offline validator notices a missing one.
  for (const group of ['triggers', 'searches', 'creates']) {
    for (const [key, op] of Object.entries(app[group] || {})) {
      if (!op.operation || !op.operation.sample || Object.keys(op.operation.sample).length === 0) {
        problems.push(`${group}.${key} has no sample`);
      }
    }
  }
  problems.push(...(await checkZapierCLI(dir, app, zapier)));
  return problems;
};

async function checkZapierCLI(dir, jsonApp, zapier) {
  const problems = [];
  const index = path.join(dir, 'index.js');
  if (!fs.existsSync(index)) return ['CLI project: index.js missing'];
  let cli;
  try {
    delete require.cache[require.resolve(path.resolve(index))];
    cli = require(path.resolve(index));
  } catch (err) {
    return [`CLI project: index.js does not load: ${err.message}`];
  }
  const result = await zapier.createAppHandler(cli)({ command: 'validate', method: '', bundle: {} }, {});
  for (const e of result.results || []) problems.push(`CLI core validate: ${e.property || ''} ${e.message || JSON.stringify(e)}`);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if ((pkg.dependencies || {})['zapier-platform-core'] !== cli.platformVersion) {
    problems.push(`CLI package.json pins zapier-platform-core ${(pkg.dependencies || {})['zapier-platform-core']}, the app says ${cli.platformVersion}`);
  }
  if (pkg.main !== 'index.js') problems.push(`CLI package.json main is ${pkg.main}, want index.js`);
  if (!cli.hydrators || typeof cli.hydrators.compressedFile !== 'function') {
    problems.push('CLI app has no hydrators.compressedFile: its file outputs cannot be hydrated');
  }
  // Same operations as the JSON app, and every job output has its file.
  for (const group of ['triggers', 'creates']) {
    const want = Object.keys(jsonApp[group] || {}).sort().join(',');
    const got = Object.keys(cli[group] || {}).sort().join(',');
    if (want !== got) problems.push(`CLI ${group} are ${got}, the JSON app's are ${want}`);
    for (const [key, op] of Object.entries(cli[group] || {})) {
      const keys = (op.operation.outputFields || []).map((f) => f.key);
      if (keys.includes('result__file_url') && !keys.includes('file')) {
        problems.push(`CLI ${group}.${key} returns jobs but has no file output`);
      }
    }
  }
  return problems;
}
