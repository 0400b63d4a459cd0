'use strict';
// Usage: node checks/run.js PLATFORM DIR SCHEMAS
// Runs one platform's validator on DIR; prints each problem and exits 1 if
// there is any.
const [platform, dir, schemas] = process.argv.slice(2);
const checks = {
  zapier: require('./zapier'),
  n8n: require('./n8n'),
  make: require('./make'),
  powerautomate: require('./powerautomate'),
  openapi: require('./openapi'),
};
if (!checks[platform] || !dir) {
  console.error(`usage: node checks/run.js (${Object.keys(checks).join('|')}) DIR [SCHEMAS]`);
  process.exit(2);
}
checks[platform](dir, schemas)
  .then((problems) => {
    for (const p of problems) console.log(`  - ${p}`);
    process.exit(problems.length ? 1 : 0);
  })
  .catch((err) => {
    console.log(`  - ${platform} validator crashed: ${err.stack || err}`);
    process.exit(1);
  });
