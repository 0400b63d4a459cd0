'use strict';
// Validates the Power Automate custom connector: apiDefinition.swagger.json
// against Microsoft's draft-04 schema (its // comment lines stripped) and
// with swagger-cli's Swagger 2.0 validation; apiProperties.json against the
// paconn draft-07 schema.
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const Ajv04 = require('ajv-draft-04');
const Ajv = require('ajv');
const addFormats = require('ajv-formats');

// readCommented parses JSON with // comments (whole-line or trailing),
// leaving // inside strings (URLs) alone.
const readCommented = (file) => {
  const src = fs.readFileSync(file, 'utf8');
  let out = '';
  let inString = false;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    if (inString) {
      out += ch;
      if (ch === '\\') out += src[++i];
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
      out += ch;
    } else if (ch === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      out += '\n';
    } else {
      out += ch;
    }
  }
  return JSON.parse(out);
};

module.exports = async function checkPowerAutomate(dir, schemas) {
  const problems = [];
  const schemaDir = path.join(schemas, 'powerautomate');
  const defFile = path.join(dir, 'apiDefinition.swagger.json');
  const propsFile = path.join(dir, 'apiProperties.json');

  const ajv04 = new Ajv04({ strict: false, allErrors: true });
  addFormats(ajv04);
  const validateDef = ajv04.compile(readCommented(path.join(schemaDir, 'apiDefinition.swagger.schema.json')));
  const def = JSON.parse(fs.readFileSync(defFile, 'utf8'));
  if (!validateDef(def)) {
    for (const e of validateDef.errors.slice(0, 8)) problems.push(`apiDefinition (schema): ${e.instancePath} ${e.message}`);
  }

  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const propsSchema = readCommented(path.join(schemaDir, 'paconn-apiProperties.schema.json'));
  // draft-07 spells the schema id "$id"; the published file still says "id".
  if (propsSchema.id && !propsSchema.$id) {
    propsSchema.$id = propsSchema.id;
    delete propsSchema.id;
  }
  const validateProps = ajv.compile(propsSchema);
  const props = JSON.parse(fs.readFileSync(propsFile, 'utf8'));
  if (!validateProps(props)) {
    for (const e of validateProps.errors.slice(0, 8)) problems.push(`apiProperties (schema): ${e.instancePath} ${e.message}`);
  }

  // What the issue asks of the connector, which the schemas allow but do not require.
  const ops = Object.values(def.paths || {}).flatMap((p) => Object.values(p));
  const trigger = ops.find((o) => o['x-ms-trigger']);
  if (!trigger) problems.push('apiDefinition: no x-ms-trigger operation');
  else if (!JSON.stringify(trigger).includes('"x-ms-notification-url":true')) problems.push('apiDefinition: trigger has no x-ms-notification-url');
  if (!ops.some((o) => o.responses && o.responses['202'] && o.responses['202'].headers && o.responses['202'].headers.Location)) {
    problems.push('apiDefinition: no action answers 202 with Location');
  }
  // Files as file content: the action that compresses takes one (a body
  // property of format byte) and answers with one.
  const resolve = (schema) => (schema && schema.$ref ? def.definitions[schema.$ref.split('/').pop()] : schema);
  const hasByte = (schema, seen = new Set()) => {
    schema = resolve(schema);
    if (!schema || seen.has(schema)) return false;
    seen.add(schema);
    if (schema.type === 'string' && schema.format === 'byte') return true;
    return Object.values(schema.properties || {}).some((p) => hasByte(p, seen)) || (schema.items ? hasByte(schema.items, seen) : false);
  };
  const compress = ops.find((o) => o.operationId === 'CompressImage');
  if (compress) {
    const body = (compress.parameters || []).find((p) => p.in === 'body');
    if (!body || !hasByte(body.schema)) problems.push(`apiDefinition: ${compress.operationId} takes no file content (format byte)`);
    if (!compress.responses['200'] || !hasByte(compress.responses['200'].schema)) problems.push(`apiDefinition: ${compress.operationId} answers no file content (format byte)`);
  } else {
    problems.push('apiDefinition: no CompressImage operation');
  }
  // Every asynchronous action tells Power Automate how long to wait between polls.
  for (const o of ops.filter((o) => o.responses && o.responses['202'])) {
    if (!o.responses['202'].headers || !o.responses['202'].headers['Retry-After']) problems.push(`apiDefinition: ${o.operationId}'s 202 has no Retry-After`);
  }
  const params = (props.properties && props.properties.connectionParameters) || {};
  if (!Object.values(params).some((p) => p.type === 'securestring')) problems.push('apiProperties: the key is not a securestring');

  // The Copilot Studio variant: the MCP endpoint as the one operation, by
  // the same schemas.
  const mcpDefFile = path.join(dir, 'mcp.apiDefinition.swagger.json');
  const mcpDef = JSON.parse(fs.readFileSync(mcpDefFile, 'utf8'));
  // Microsoft's published schema predates x-ms-agentic-protocol (the
  // extension of Copilot Studio's MCP connector template): the rest of the
  // definition is held to the schema, the extension is checked below.
  const mcpBare = JSON.parse(JSON.stringify(mcpDef));
  for (const item of Object.values(mcpBare.paths || {})) for (const o of Object.values(item)) delete o['x-ms-agentic-protocol'];
  if (!validateDef(mcpBare)) {
    for (const e of validateDef.errors.slice(0, 8)) problems.push(`mcp.apiDefinition (schema): ${e.instancePath} ${e.message}`);
  }
  const mcpProps = JSON.parse(fs.readFileSync(path.join(dir, 'mcp.apiProperties.json'), 'utf8'));
  if (!validateProps(mcpProps)) {
    for (const e of validateProps.errors.slice(0, 8)) problems.push(`mcp.apiProperties (schema): ${e.instancePath} ${e.message}`);
  }
  const mcpOps = Object.values(mcpDef.paths || {}).flatMap((p) => Object.values(p));
  if (!mcpOps.some((o) => o['x-ms-agentic-protocol'] === 'mcp-streamable-1.0')) {
    problems.push('mcp.apiDefinition: no operation with x-ms-agentic-protocol mcp-streamable-1.0');
  }

  const cli = require.resolve('@apidevtools/swagger-cli/bin/swagger-cli.js');
  for (const file of [defFile, mcpDefFile]) {
    try {
      execFileSync(process.execPath, [cli, 'validate', file], { stdio: 'pipe' });
    } catch (err) {
      problems.push(`swagger-cli: ${String(err.stderr || err.stdout || err.message).trim().split('\n')[0]}`);
    }
  }
  return problems;
};
