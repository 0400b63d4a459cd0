'use strict';
// Validates openapi.json with @apidevtools/swagger-parser (OpenAPI 3 schema
// plus its semantic checks: $refs resolve, operationIds unique, path
// parameters declared).
const path = require('path');
const SwaggerParser = require('@apidevtools/swagger-parser');

module.exports = async function checkOpenAPI(dir) {
  try {
    const api = await SwaggerParser.validate(path.join(dir, 'openapi.json'));
    if (!/^3\./.test(api.openapi || '')) return [`not OpenAPI 3: openapi=${api.openapi}`];
    return [];
  } catch (err) {
    return [String(err.message).split('\n').slice(0, 5).join(' | ')];
  }
};
