'use strict';
// Validates the Zapier app: zapier-platform-schema's validateAppDefinition on
// the JSON as written, then zapier-platform-core's compile (which turns each
// {"source": ...} into a function) and its own validate command.
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
  return problems;
};
