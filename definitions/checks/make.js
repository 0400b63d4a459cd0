'use strict';
// Validates Make IML files against the Make apps SDK schemas (mapping from
// schemas/README.md): each file by its suffix.
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');
const addFormats = require('ajv-formats');

const mapping = [
  [/^base\.iml\.json$/, 'base.json'],
  [/\.(communication|attach|detach|publish)\.iml\.json$/, 'api.json'],
  [/\.(params|mappable-params|interface)\.iml\.json$/, 'parameters.json'],
  [/\.samples\.iml\.json$/, 'samples.json'],
  [/\.scope-list\.iml\.json$/, 'scopes.json'],
  [/\.epoch\.iml\.json$/, 'epoch.json'],
  [/^groups\.json$/, 'groups.json'],
  [/^common\.json$/, 'common.json'],
  [/^makecomapp\.json$/, 'makecomapp.schema.json'],
];

module.exports = async function checkMake(dir, schemas) {
  const schemaDir = path.join(schemas, 'make');
  const ajv = new Ajv({ strict: false, unicodeRegExp: false, allErrors: true });
  addFormats(ajv);
  for (const f of fs.readdirSync(schemaDir).filter((f) => f.endsWith('.json'))) {
    const s = JSON.parse(fs.readFileSync(path.join(schemaDir, f), 'utf8'));
    s.$id = f;
    delete s.$schema;
    ajv.addSchema(s, f);
  }
  const problems = [];
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (!files.includes('base.iml.json')) problems.push('base.iml.json missing');
  if (!files.some((f) => f.endsWith('.attach.iml.json'))) problems.push('no webhook attach file');
  if (!files.some((f) => f.endsWith('.detach.iml.json'))) problems.push('no webhook detach file');
  for (const f of files) {
    const m = mapping.find(([re]) => re.test(f));
    if (!m) {
      problems.push(`${f}: no schema maps this file name`);
      continue;
    }
    let data;
    try {
      data = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
    } catch (err) {
      problems.push(`${f}: not JSON: ${err.message}`);
      continue;
    }
    const validate = ajv.getSchema(m[1]);
    if (!validate(data)) {
      for (const e of validate.errors.slice(0, 5)) problems.push(`${f} (${m[1]}): ${e.instancePath} ${e.message}`);
    }
  }
  return problems;
};
