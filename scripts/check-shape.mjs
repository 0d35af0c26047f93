// The house's shape, checked by `npm run lint`: file and folder sizes, arrows that climb back
// up the floors, workflow patches in files whose changes must be new revisions, SQL outside
// query modules, and how far each wing reaches outside its folders. Each limit says why it
// exists; raise one only with a reason written beside it.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import madge from 'madge';

const ROOTS = ['src', 'workflows', 'activities'];
/** A product file past this is two jobs: split it where the jobs part. */
const MAX_FILE_LINES = 400;
/** Folders that gather what belongs in wings: past the budget, a capability is landing in the wrong place. */
const FOLDER_BUDGETS = { 'src/api': 3000 };
/**
 * Imports from a lower floor to a higher one; each is a dependency the layering does not
 * want. A ratchet: the count when the floors were drawn (#61 asked for at most 14).
 */
const MAX_UP_ARROWS = 5;

/**
 * The floors, highest first: a module may import its own floor and those below. The first
 * pattern that matches places a file. Vocabulary (pure types, names and rules every floor
 * speaks, a wing's problem codes, settings and Temporal contract among them) sits at the
 * bottom whatever folder it lives in.
 */
const FLOORS = [
  [
    1,
    'vocabulary',
    /^src\/(upload\/(types|sniff)|pipelines\/(step-results|catalogue|steps)|downstream\/(types|events)|tokens\/grant|images\/spec|imports\/failures|temporal\/(names|definitions|ids|trace-header|step-labels)|codec\/payload-scope)\.ts$|^src\/[\w-]+\/(problems|settings|contract)\.ts$/,
  ],
  [
    9,
    'entry points and the composition root',
    /^src\/(main|cli|runtime|worker|ops-server|start-watchdog|role-settings|services|event-loop-hold)\.ts$|^src\/devstack\//,
  ],
  [8, 'the API (mounts every door and wing)', /^src\/api\//],
  [7, 'what the worker runs', /^(workflows|activities)\//],
  // A wing's files that sit in a lower layer's folder; every other wing folder is placed by the last line.
  [6, 'doors and wings', /^src\/(codec\/routes|telemetry\/request-trace)\.ts$/],
  [5, 'the HTTP kit, the session core, lifecycle', /^src\/(http|sessions|lifecycle)\//],
  [
    4,
    'the upload path and its services',
    /^src\/(upload|tokens|pipelines|media|scan|downstream|placement)\/|^src\/(audit|tenants|credentials)\.ts$/,
  ],
  [3, 'Temporal, the payload codec, telemetry', /^src\/(telemetry|temporal|codec)\//],
  [2, 'database and object stores', /^src\/(db|storage)\//],
  [1, 'base', /^src\/[^/]+\.ts$|^src\/config\//],
  // Any other folder under src/ is a door or a wing (docs/ARCHITECTURE.md "Wings"): a new wing needs no line here.
  [6, 'doors and wings', /^src\/[^/]+\//],
];

/**
 * Workflow files whose behaviour is fixed per revision: a change is a new revision (a new
 * file or a new `input.revision`, docs/ARCHITECTURE.md "Workflow revisions"), never another
 * `patched()`. The patches they already carry are listed; any other fails.
 */
const FROZEN = {
  'workflows/upload.ts': [],
  'workflows/imports/import-run.ts': ['importPatches.eraseCanceledImport'],
  'workflows/upload-offers.ts': ['patches.refusedCopyDiscarded'],
  'workflows/upload-r3.ts': [],
  'workflows/downstream-v1.ts': [],
};

/** Where SQL may be written: the core's query modules (`src/db/`) and a wing's (`queries.ts`, `*-queries.ts`, `queries/`). */
const QUERY_MODULE = /^src\/db\/|\/queries\/[^/]+\.ts$|\/([\w-]+-)?queries\.ts$/;
const SQL_STATEMENT = /\b(SELECT\s+[\w*(]|INSERT\s+INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET)\b/;

/**
 * A wing is a folder under src/ the list of wings (src/api/wings.ts) imports its `wing.ts`
 * from, with its `workflows/` and `activities/` sub-folders of the same name. The files
 * outside it that a capability touches are those that import it and those outside every wing
 * that serve it alone (they belong inside); docs/ARCHITECTURE.md "Wings" says what the few
 * left are for.
 */
const WING_REACH = 4;

const failures = [];
const fail = (line) => failures.push(line);

function productFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return productFiles(path);
    return /\.(ts|tsx)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}
const lines = (file) => readFileSync(file, 'utf8').split('\n').length - 1;

const files = ROOTS.flatMap(productFiles);
for (const file of files) {
  const n = lines(file);
  if (n > MAX_FILE_LINES) fail(`${file}: ${n} lines, over ${MAX_FILE_LINES}: a file this long does two jobs; split it where they part.`);
}
for (const [folder, budget] of Object.entries(FOLDER_BUDGETS)) {
  const n = files.filter((f) => f.startsWith(`${folder}/`)).reduce((sum, f) => sum + lines(f), 0);
  if (n > budget) fail(`${folder}: ${n} lines, over its ${budget}: move what a capability owns into its wing (docs/ARCHITECTURE.md).`);
}

for (const [file, allowed] of Object.entries(FROZEN)) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/\bpatched\(([^)]*)\)/g)) {
    if (!allowed.includes(m[1].trim())) {
      fail(
        `${file}: patched(${m[1]}) in a frozen file: make a new workflow revision instead (docs/ARCHITECTURE.md, "Workflow revisions").`,
      );
    }
  }
}
for (const file of files.filter((f) => f.startsWith('workflows/'))) {
  for (const m of readFileSync(file, 'utf8').matchAll(/\bpatched\(\s*['"`]/g)) {
    fail(
      `${file}: patched() with a literal ID at offset ${m.index}: name it in patches (src/temporal/names.ts, or its wing's contract.ts).`,
    );
  }
}

for (const file of files.filter((f) => !QUERY_MODULE.test(f))) {
  const m = SQL_STATEMENT.exec(readFileSync(file, 'utf8'));
  if (m) fail(`${file}: SQL (${m[0].trim()} …) outside a query module: SQL lives in src/db/queries/ or its wing's queries.ts.`);
}

const floorOf = (file) => FLOORS.find(([, , pattern]) => pattern.test(file));
const graph = (await madge(ROOTS, { fileExtensions: ['ts'], tsConfig: 'tsconfig.json', excludeRegExp: [/^src\/web\//] })).obj();
const upArrows = [];
for (const [from, deps] of Object.entries(graph)) {
  const a = floorOf(from);
  if (!a) fail(`${from}: on no floor: add it to FLOORS in scripts/check-shape.mjs.`);
  for (const to of deps) {
    const b = floorOf(to);
    if (a && b && b[0] > a[0]) upArrows.push(`  ${from} (${a[1]}) -> ${to} (${b[1]})`);
  }
}
if (upArrows.length > MAX_UP_ARROWS) {
  fail(
    `${upArrows.length} imports climb to a higher floor, over ${MAX_UP_ARROWS}: each ties a lower layer to one above it.\n${upArrows.join('\n')}`,
  );
}

const wingList = existsSync('src/api/wings.ts') ? readFileSync('src/api/wings.ts', 'utf8') : '';
const wingNames = [...wingList.matchAll(/^import \{ \w+ \} from '\.\.\/([\w-]+)\/wing';$/gm)].map((m) => m[1]);
const wingOf = (file) => wingNames.find((w) => ['src', 'workflows', 'activities'].some((root) => file.startsWith(`${root}/${w}/`)));
const importers = new Map();
for (const [from, deps] of Object.entries(graph)) for (const to of deps) importers.set(to, [...(importers.get(to) ?? []), from]);
const reach = {};
for (const wing of wingNames) {
  const touched = new Map();
  for (const [from, deps] of Object.entries(graph)) {
    if (wingOf(from) !== wing && deps.some((to) => wingOf(to) === wing)) touched.set(from, 'imports it');
    else if (!wingOf(from) && (importers.get(from) ?? []).length && (importers.get(from) ?? []).every((by) => wingOf(by) === wing)) {
      touched.set(from, 'serves it alone: move it in');
    }
  }
  reach[wing] = touched.size;
  if (touched.size > WING_REACH) {
    fail(
      `wing ${wing}: ${touched.size} files outside it, over ${WING_REACH}: a capability's code lives in its wing.\n${[...touched].map(([file, how]) => `  ${file} (${how})`).join('\n')}`,
    );
  }
}

const root = relative(process.cwd(), '.') || '.';
if (failures.length) {
  console.error(`check-shape (${root}): ${failures.length} problem(s)\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(
  `check-shape: ${files.length} product files, none over ${MAX_FILE_LINES} lines; src/api within ${FOLDER_BUDGETS['src/api']}; ${upArrows.length} up-arrows (at most ${MAX_UP_ARROWS}); files outside each wing: ${Object.entries(
    reach,
  )
    .map(([w, n]) => `${w} ${n}`)
    .join(', ')}.`,
);
