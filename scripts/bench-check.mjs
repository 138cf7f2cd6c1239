// `scripts/bench.sh --dry`: checks, without measuring anything, that a run of the benches would
// start every bench and get every figure (run by `make test` through tests/bench_runner.rs).
//   node --experimental-vm-modules --experimental-import-meta-resolve scripts/bench-check.mjs LIST --cargo Cargo.toml \
//     --native benches/*.rs --browser tests/browser_bench_*.rs --script scripts/bench.sh \
//     --e2e-dir tests/e2e/bench --e2e <the *.bench.mjs bench.sh picked>
// The benches are the ones bench.sh picked (its own selection, passed in). Checked:
//   - the list (benches/figures.txt): `<figure> <source> [optional]` a line, each figure once;
//   - every figure the list gives a source is printed by that source, and every figure a bench's source
//     prints is in the list under it: a bench prints `bench <name> <value> <unit>` with the name
//     written out (Rust: println!/console_log! "bench <name> ..."; js: console.log(`bench <name> ...`),
//     or `bench ${name}` over a `results` object whose keys are assigned as `results.<name> = ...`;
//     bash: echo "bench <name> ...");
//   - every bench prints a figure (a helper picked as a bench prints none), every native bench is a
//     `[[bench]]` of Cargo.toml with `harness = false`;
//   - the e2e benches: each module in their directory is a bench or a helper imported by one (a bench
//     misnamed is never run), no bench is imported by another module, and each bench's module graph
//     parses and links (every relative import exists and exports what is imported, every package and
//     node builtin resolves), which is what `node <bench>` does before it runs anything.
// Prints each problem and exits 1 if there is any; else one line saying what was checked.
import vm from 'node:vm';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const problems = [];
const problem = (msg) => problems.includes(msg) || problems.push(msg);

// --- arguments ----------------------------------------------------------------------------------
const [listFile, ...rest] = process.argv.slice(2);
const groups = { cargo: [], native: [], browser: [], script: [], e2e: [], 'e2e-dir': [] };
let group = null;
for (const a of rest) {
  if (a.startsWith('--')) {
    group = a.slice(2);
    if (!(group in groups)) throw new Error(`bench-check: unknown option ${a}`);
  } else if (group) groups[group].push(a);
  else throw new Error(`bench-check: ${a} before any --group`);
}
const kinds = new Map(); // source -> native | browser | script | e2e
for (const k of ['native', 'browser', 'script', 'e2e']) for (const f of groups[k]) kinds.set(f, k);

// --- the list -----------------------------------------------------------------------------------
const listed = new Map(); // figure -> { source, optional, line }
if (!listFile || !existsSync(listFile)) problem(`the figure list ${listFile} does not exist`);
else {
  readFileSync(listFile, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/#.*/, '').trim();
      if (!line) return;
      const at = `${listFile}:${i + 1}`;
      const [name, source, flag, ...more] = line.split(/\s+/);
      if (!/^[a-z][a-z0-9_]*$/.test(name) || !source || (flag && flag !== 'optional') || more.length)
        return problem(`${at}: expected \`<figure> <source> [optional]\`, got \`${line}\``);
      if (listed.has(name)) return problem(`${at}: ${name} is listed twice (also line ${listed.get(name).line})`);
      listed.set(name, { source, optional: flag === 'optional', line: i + 1 });
      if (!kinds.has(source))
        problem(`${at}: ${name}'s source ${source} is not a bench scripts/bench.sh runs` +
          (existsSync(source) ? ' (a helper?)' : ' (no such file)'));
    });
}

// --- what each source prints --------------------------------------------------------------------
const NAME = '([a-z][a-z0-9_]*)';
function printed(file, kind) {
  const src = readFileSync(file, 'utf8');
  const names = new Set();
  const add = (re) => { for (const m of src.matchAll(re)) names.add(m[1]); };
  let computed = false;
  if (kind === 'native') {
    add(new RegExp(`println!\\(\\s*"bench ${NAME} `, 'g'));
    computed = /println!\(\s*"bench \{/.test(src);
  } else if (kind === 'browser') {
    add(new RegExp(`console_log!\\(\\s*"bench ${NAME} `, 'g'));
    computed = /console_log!\(\s*"bench \{/.test(src);
  } else if (kind === 'script') {
    add(new RegExp(`^\\s*echo "bench ${NAME} `, 'gm'));
    computed = /echo "bench \$/.test(src);
  } else {
    add(new RegExp(`console\\.log\\(\\s*\`bench ${NAME} `, 'g'));
    // `bench ${name} ...` over the entries of a `results` object: its keys are the names.
    if (/`bench \$\{name\} /.test(src) && /Object\.entries\(results\)/.test(src))
      add(new RegExp(`\\bresults\\.${NAME}\\s*=[^=]`, 'g'));
    else computed = /console\.log\([^)]*`bench \$\{/.test(src);
  }
  if (computed)
    problem(`${file} prints a figure under a computed name: write each name out (see scripts/bench-check.mjs)`);
  return names;
}

for (const [file, kind] of kinds) {
  if (kind === 'script' && file.endsWith('.sh')) {
    try {
      execFileSync('bash', ['-n', file], { stdio: 'pipe' });
    } catch (e) {
      problem(`${file} does not parse: ${String(e.stderr).trim()}`);
    }
  }
  if (!existsSync(file)) { problem(`${file} does not exist`); continue; }
  const names = printed(file, kind);
  if (names.size === 0) problem(`${file} prints no figure (\`bench <name> <value> <unit>\`): a helper picked as a bench?`);
  for (const n of names) {
    const l = listed.get(n);
    if (!l) problem(`${file} prints ${n}, which ${listFile} does not list (add \`${n} ${file}\`)`);
    else if (l.source !== file) problem(`${file} prints ${n}, which ${listFile}:${l.line} gives to ${l.source}`);
  }
  for (const [n, l] of listed)
    if (l.source === file && !names.has(n)) problem(`${listFile}:${l.line}: ${file} does not print ${n}`);
}

// --- native benches are cargo benches without the libtest harness -------------------------------
const cargo = groups.cargo[0] && existsSync(groups.cargo[0]) ? readFileSync(groups.cargo[0], 'utf8') : '';
const declared = new Map();
for (const m of cargo.matchAll(/\[\[bench\]\]\s*\n([^[]*)/g)) {
  const name = /^\s*name\s*=\s*"([^"]+)"/m.exec(m[1])?.[1];
  if (name) declared.set(name, /^\s*harness\s*=\s*false/m.test(m[1]));
}
for (const f of groups.native) {
  const name = basename(f, '.rs');
  if (!declared.has(name)) problem(`${f}: no \`[[bench]] name = "${name}"\` in ${groups.cargo[0]}`);
  else if (!declared.get(name)) problem(`${f}: its [[bench]] in ${groups.cargo[0]} lacks \`harness = false\``);
}

// --- the e2e benches: picked by name, their helpers apart, each module graph linked --------------
// Each module parsed once per graph (a failed link leaves its modules unusable for another graph).
const parsed = new Map(); // absolute path -> SourceTextModule, or null when it did not parse
function load(file, cache = parsed) {
  if (cache.has(file)) return cache.get(file);
  let m = null;
  if (!existsSync(file)) problem(`${relative('.', file)} does not exist (imported by a bench)`);
  else {
    try {
      m = new vm.SourceTextModule(readFileSync(file, 'utf8'), { identifier: file });
    } catch (e) {
      let where = '';
      try {
        execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' });
      } catch (c) {
        where = `\n${String(c.stderr).trim()}`;
      }
      problem(`${relative('.', file)} does not parse: ${e.message}${where}`);
    }
  }
  cache.set(file, m);
  return m;
}
const builtins = new Set(builtinModules);
const linkerFor = (cache) => async (spec, from) => {
  const fromFile = from.identifier;
  if (spec.startsWith('.') || spec.startsWith('/')) {
    const m = load(resolve(dirname(fromFile), spec), cache);
    if (!m) throw new Error(`cannot load ${spec} from ${relative('.', fromFile)}`);
    return m;
  }
  let url;
  if (spec.startsWith('node:') || builtins.has(spec)) url = spec;
  else {
    try {
      // As `import` resolves it from that module (the package's ESM entry, not require's).
      url = import.meta.resolve(spec, pathToFileURL(fromFile).href);
    } catch {
      throw new Error(`the package ${spec}, imported by ${relative('.', fromFile)}, does not resolve ` +
        '(tests/e2e/node_modules is installed by scripts/setup.sh)');
    }
  }
  const ns = await import(url);
  const keys = Object.keys(ns);
  return new vm.SyntheticModule(keys, function () { for (const k of keys) this.setExport(k, ns[k]); }, { identifier: spec });
};

const e2e = groups.e2e.map((f) => resolve(f));
const imported = new Map(); // absolute path -> the module that imports it
function walk(file, seen = new Set()) {
  if (seen.has(file)) return;
  seen.add(file);
  const m = load(file);
  if (!m) return;
  for (const spec of m.dependencySpecifiers) {
    if (!spec.startsWith('.')) continue;
    const dep = resolve(dirname(file), spec);
    if (!imported.has(dep)) imported.set(dep, file);
    walk(dep, seen);
  }
}
for (const f of e2e) walk(f);
for (const f of e2e) {
  if (imported.has(f)) problem(`${relative('.', f)} is picked as a bench but ${relative('.', imported.get(f))} imports it: a helper?`);
}
for (const dir of groups['e2e-dir']) {
  if (!existsSync(dir)) continue;
  for (const name of readdirSync(dir).filter((n) => /\.m?js$/.test(n)).sort()) {
    const f = resolve(join(dir, name));
    if (!e2e.includes(f) && !imported.has(f))
      problem(`${join(dir, name)} is neither a bench scripts/bench.sh runs (*.bench.mjs) nor imported by one`);
  }
}
for (const f of e2e) {
  if (!parsed.get(f)) continue;
  const cache = new Map();
  try {
    await load(f, cache).link(linkerFor(cache));
  } catch (e) {
    problem(`${relative('.', f)} does not link (its imports, or theirs): ${e.message}`);
  }
}

// --- verdict ------------------------------------------------------------------------------------
if (problems.length) {
  for (const p of problems) console.log(`bench check: ${p}`);
  console.log(`bench check: ${problems.length} problem(s)`);
  process.exit(1);
}
const expected = [...listed.values()].filter((l) => !l.optional).length;
console.log(`bench check: ${kinds.size} benches, ${listed.size} figures listed (${expected} expected, ` +
  `${listed.size - expected} optional), ${e2e.length} e2e benches' modules linked: ok`);
