// Runs every *.test.mjs here with Node's test runner, one file at a time (the journeys share a 2-core
// machine with Chromium). Usage: node run.mjs [file-filter...]; DIST points at the built app
// (default ../../dist), FIXTURES_DIR at shared/fixtures (default: found above this directory).

import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The test files to run: all *.test.mjs, or those whose name contains one of the filters. */
function testFiles(filters) {
  const all = readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort();
  return filters.length ? all.filter((f) => filters.some((x) => f.includes(x))) : all;
}

const files = testFiles(process.argv.slice(2));
if (files.length === 0) {
  console.error('run.mjs: no test file matches');
  process.exit(1);
}
const env = { ...process.env, DIST: resolve(process.env.DIST ?? join(here, '..', '..', 'dist')) };
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...files], { cwd: here, env, stdio: 'inherit' });
process.exit(result.status ?? 1);
