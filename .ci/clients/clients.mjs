// Real-client check of examples/customers with the official TypeScript MCP
// clients. One run = one client package, one protocol era, one transport:
//
//   node clients.mjs --sdk v2|v1 --era modern|legacy --transport http|stdio
//                    (--url http://127.0.0.1:PORT/mcp | --bin /path/to/customers)
//
//   --sdk v2  @modelcontextprotocol/client 2.x: modern = versionNegotiation
//             pinned to 2026-07-28 (server/discover, subscriptions/listen);
//             legacy = plain initialize (2025-11-25, resources/subscribe).
//   --sdk v1  @modelcontextprotocol/sdk 1.x: legacy only.
//
// Every check prints one line, "PASS <name>" or "FAIL <name>: <why>", and the
// exit code is 1 if any failed. Each request has its own timeout, and the whole
// run has a deadline after which the remaining checks FAIL and the process
// exits. .ci/real-clients.sh runs this file (copied next to the installed
// node_modules) once per combination and counts the lines.

import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';

const { values: opt } = parseArgs({
  options: {
    sdk: { type: 'string' },
    era: { type: 'string' },
    transport: { type: 'string' },
    url: { type: 'string' },
    bin: { type: 'string' },
  },
});

const REQUEST_MS = Number(process.env.RC_REQUEST_TIMEOUT_MS || 10000); // one request
const NOTIFY_MS = Number(process.env.RC_NOTIFY_TIMEOUT_MS || 10000); // wait for an expected notification
const GRACE_MS = Number(process.env.RC_GRACE_MS || 2000); // watch for an unexpected one
const DEADLINE_MS = Number(process.env.RC_RUN_DEADLINE_MS || 60000); // the whole run

const label = `${opt.sdk === 'v1' ? 'sdk1' : 'client2'}/${opt.era}/${opt.transport}`;
const MODERN = opt.era === 'modern';

// The templates the example must list (SPEC.md, "The example application").
const T_INDEX = 'app://customers_index{?direction,page,per_page,search,sort}';
const T_SHOW = 'app://customers_show/{id}';
const T_ORDERS = 'app://orders_between/{from}/{to}{?status}';

// ---------------------------------------------------------------- reporting

let failed = 0;
let passed = 0;
const oneLine = (s) => String(s).replace(/\s+/g, ' ').slice(0, 600);
function pass(name) {
  passed++;
  console.log(`PASS ${label} ${name}`);
}
function fail(name, why) {
  failed++;
  console.log(`FAIL ${label} ${name}: ${oneLine(why)}`);
}
class CheckError extends Error {}
function expect(cond, why) {
  if (!cond) throw new CheckError(why);
}
const show = (v) => {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
};
function describeError(e) {
  if (e instanceof CheckError) return e.message;
  const parts = [e?.name || 'Error'];
  if (e?.code !== undefined) parts.push(`code=${e.code}`);
  parts.push(e?.message ?? String(e));
  if (e?.data !== undefined) parts.push(`data=${show(e.data)}`);
  return parts.join(' ');
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(pred, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(25);
  }
  return pred();
}

// ------------------------------------------------------- the two client APIs

// makeClient returns the same small surface over both packages, so that the
// checks below are written once.
async function makeClient() {
  const stderrTail = [];
  const keepStderr = (stream) =>
    stream?.on('data', (b) => {
      stderrTail.push(String(b));
      while (stderrTail.length > 20) stderrTail.shift();
    });
  const stdioParams = { command: opt.bin, args: ['-stdio'], stderr: 'pipe' };
  const updated = []; // URIs of notifications/resources/updated, in order of arrival
  // JSON-RPC error responses as they came off the wire. The 2.x client turns
  // a -32002 with data.uri into its ResourceNotFoundError, whose code is
  // -32602 whatever the server sent, so error checks read the wire instead.
  const wireErrors = [];
  const tapWire = (transport) => {
    const next = transport.onmessage;
    transport.onmessage = (msg, extra) => {
      if (msg && typeof msg === 'object' && 'error' in msg && 'id' in msg) wireErrors.push(msg);
      return next?.(msg, extra);
    };
  };
  const info = { name: 'mcplive-real-clients', version: '1.0.0' };

  if (opt.sdk === 'v2') {
    const m = await import('@modelcontextprotocol/client');
    const client = new m.Client(info, MODERN ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
    let transport;
    if (opt.transport === 'http') {
      transport = new m.StreamableHTTPClientTransport(new URL(opt.url));
    } else {
      const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
      transport = new StdioClientTransport(stdioParams);
      keepStderr(transport.stderr);
    }
    client.setNotificationHandler('notifications/resources/updated', (n) => {
      updated.push(n.params.uri);
    });
    await client.connect(transport, { timeout: REQUEST_MS });
    tapWire(transport);
    const o = { timeout: REQUEST_MS };
    return {
      updated,
      wireErrors,
      stderrTail,
      era: () => `${client.getProtocolEra()} ${client.getNegotiatedProtocolVersion()}`,
      wantEra: MODERN ? 'modern 2026-07-28' : 'legacy 2025-11-25',
      listTemplates: () => client.listResourceTemplates(undefined, { ...o, cacheMode: 'bypass' }),
      read: (uri) => client.readResource({ uri }, { ...o, cacheMode: 'bypass' }),
      complete: (p) => client.complete(p, o),
      callTool: (name, args) => client.callTool({ name, arguments: args }, o),
      // modern: one subscriptions/listen stream; legacy: resources/subscribe per URI.
      // Returns the URIs the server acknowledged.
      subscribe: async (uris) => {
        if (MODERN) {
          const sub = await client.listen({ resourceSubscriptions: uris }, o);
          closers.push(() => sub.close());
          return sub.honoredFilter?.resourceSubscriptions ?? [];
        }
        const acked = [];
        for (const uri of uris) {
          await client.subscribeResource({ uri }, o);
          acked.push(uri);
        }
        return acked;
      },
      unsubscribe: (uri) => client.unsubscribeResource({ uri }, o),
      close: async () => {
        if (opt.transport === 'http' && !MODERN) await transport.terminateSession?.().catch(() => {});
        await client.close();
      },
    };
  }

  // @modelcontextprotocol/sdk 1.x: 2025-11-25 and older only.
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { ResourceUpdatedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = new Client(info, {});
  let transport;
  let negotiated;
  if (opt.transport === 'http') {
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(opt.url));
  } else {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    transport = new StdioClientTransport(stdioParams);
    keepStderr(transport.stderr);
  }
  // The 1.x client hands the negotiated version to transports that take it
  // (HTTP does, stdio has no such method): record it for both.
  const setPV = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    setPV?.(v);
  };
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updated.push(n.params.uri);
  });
  await client.connect(transport, { timeout: REQUEST_MS });
  tapWire(transport);
  const o = { timeout: REQUEST_MS };
  return {
    updated,
    wireErrors,
    stderrTail,
    era: () => `legacy ${negotiated}`,
    wantEra: 'legacy 2025-11-25',
    listTemplates: () => client.listResourceTemplates(undefined, o),
    read: (uri) => client.readResource({ uri }, o),
    complete: (p) => client.complete(p, o),
    // 1.x: callTool(params, resultSchema, options).
    callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, o),
    subscribe: async (uris) => {
      const acked = [];
      for (const uri of uris) {
        await client.subscribeResource({ uri }, o);
        acked.push(uri);
      }
      return acked;
    },
    unsubscribe: (uri) => client.unsubscribeResource({ uri }, o),
    close: async () => {
      if (opt.transport === 'http') await transport.terminateSession?.().catch(() => {});
      await client.close();
    },
  };
}

const closers = [];

// ------------------------------------------------------------------- checks

const token = () => randomBytes(5).toString('hex'); // 10 lowercase hex chars, unique per run
const runTok = token();

// readJSON reads uri and checks the content's shape; returns the parsed JSON.
async function readJSON(c, uri) {
  const res = await c.read(uri);
  expect(Array.isArray(res?.contents) && res.contents.length === 1, `want one content for ${uri}, got ${show(res)}`);
  const [ct] = res.contents;
  expect(ct.uri === uri, `content uri ${show(ct.uri)} is not the URI sent ${show(uri)}`);
  expect(ct.mimeType === 'application/json', `content mimeType ${show(ct.mimeType)}, want application/json`);
  expect(typeof ct.text === 'string', `content has no text: ${show(ct)}`);
  try {
    return JSON.parse(ct.text);
  } catch (e) {
    throw new CheckError(`content text is not JSON: ${ct.text.slice(0, 200)}`);
  }
}

// readError reads uri expecting a JSON-RPC error; returns the error object
// exactly as the server sent it on the wire ({code, message, data}).
async function readError(c, uri) {
  return wireError(c, uri, () => c.read(uri));
}

// wireError runs call, a request about what that must fail, and returns its
// JSON-RPC error as it came off the wire.
async function wireError(c, what, call) {
  let res;
  const seen = c.wireErrors.length;
  try {
    res = await call();
  } catch (e) {
    const wire = c.wireErrors.slice(seen).at(-1)?.error;
    expect(wire, `want a JSON-RPC error response, got ${describeError(e)}`);
    return wire;
  }
  throw new CheckError(`want an error for ${what}, got result ${show(res).slice(0, 300)}`);
}

async function createCustomer(c, name, email) {
  const res = await c.callTool('customers_create', { name, email });
  expect(!res.isError, `customers_create(${show(name)}) failed: ${show(res.content)}`);
  return res;
}

function completionValues(res) {
  const v = res?.completion?.values;
  expect(Array.isArray(v), `completion has no values: ${show(res)}`);
  return v;
}
const sameSet = (a, b) => a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');

const checks = [];
const check = (name, fn) => checks.push({ name, fn });
let c; // the connected client
let adaID;

check('connect', async () => {
  c = await makeClient();
  expect(c.era() === c.wantEra, `negotiated ${show(c.era())}, want ${show(c.wantEra)}`);
});

check('templates/list', async () => {
  const { resourceTemplates: ts } = await c.listTemplates();
  expect(Array.isArray(ts), `no resourceTemplates in the result`);
  const got = ts.map((t) => t.uriTemplate);
  expect(sameSet(got, [T_INDEX, T_SHOW, T_ORDERS]), `uriTemplates ${show(got)}, want exactly ${show([T_INDEX, T_SHOW, T_ORDERS])}`);
  for (const t of ts) expect(t.mimeType === 'application/json', `template ${t.uriTemplate} has mimeType ${show(t.mimeType)}`);
  const names = ts.map((t) => t.name);
  expect(names.join() === [...names].sort().join(), `templates not sorted by name: ${show(names)}`);
});

check('read search=ada%20lovelace', async () => {
  const uri = 'app://customers_index?search=ada%20lovelace';
  const page = await readJSON(c, uri);
  const ada = page.customers?.find((x) => x.name === 'Ada Lovelace');
  expect(ada, `no "Ada Lovelace" in ${show(page).slice(0, 300)}`);
  expect(page.total === 1, `total ${show(page.total)}, want 1`);
  adaID = ada.id;
});

check('read percent-encoded &, /, unicode', async () => {
  // A customer whose name needs %26, %2F, %20 and UTF-8 escapes to be found,
  // read back through a URI with its query parameters out of order.
  const name = `Zoë & Söhne/${runTok}`;
  await createCustomer(c, name, `zoe.${runTok}@example.test`);
  const search = encodeURIComponent(`zoë & söhne/${runTok}`);
  expect(search.includes('%26') && search.includes('%2F') && search.includes('%C3%AB'), `bad test: ${search}`);
  const uri = `app://customers_index?per_page=5&search=${search}&direction=desc&sort=created_at`;
  const page = await readJSON(c, uri);
  expect(page.total === 1 && page.customers?.[0]?.name === name, `want exactly ${show(name)}, got ${show(page).slice(0, 300)}`);
});

check('read customers_show/{id}', async () => {
  expect(adaID !== undefined, 'no id for Ada Lovelace (the search read failed)');
  const uri = `app://customers_show/${adaID}`;
  const cust = await readJSON(c, uri);
  expect(cust.name === 'Ada Lovelace' && cust.id === adaID, `got ${show(cust)}`);
});

// A tools/call of a live command links, beside its JSON text, the URI that
// reads and watches its result; the SDK's result schema must take it.
check('tools/call customers_show links app://customers_show/{id}', async () => {
  expect(adaID !== undefined, 'no id for Ada Lovelace (the search read failed)');
  const res = await c.callTool('customers_show', { id: adaID });
  expect(!res.isError, `customers_show failed: ${show(res.content)}`);
  const want = `app://customers_show/${adaID}`;
  const links = (res.content ?? []).filter((x) => x.type === 'resource_link');
  expect(links.length === 1 && links[0].uri === want, `resource_link contents ${show(links)}, want one to ${want}`);
  expect(res.content[0]?.type === 'text', `first content ${show(res.content[0])}, want the JSON text`);
  const cust = await readJSON(c, links[0].uri);
  expect(cust.id === adaID && cust.name === 'Ada Lovelace', `read of the link: ${show(cust)}`);
});

check('read orders_between/{from}/{to}?status=paid', async () => {
  const uri = 'app://orders_between/2023-01-01/2025-12-31?status=paid';
  const res = await readJSON(c, uri);
  expect(Array.isArray(res.orders) && res.orders.length > 0, `no orders: ${show(res).slice(0, 300)}`);
  const other = res.orders.filter((o) => o.status !== 'paid');
  expect(other.length === 0, `orders not paid: ${show(other.slice(0, 3))}`);
});

check('read per_page=0 is -32602 with data.errors[per_page]', async () => {
  const uri = 'app://customers_index?per_page=0';
  const e = await readError(c, uri);
  expect(e.code === -32602, `code ${e.code}, want -32602: error=${show(e)}`);
  const errs = e.data?.errors;
  expect(Array.isArray(errs) && errs.some((x) => x?.field === 'per_page' && typeof x.message === 'string' && x.message),
    `data.errors has no {field:"per_page",message} entry: data=${show(e.data)}`);
});

check('read unknown customer is resource-not-found', async () => {
  const uri = 'app://customers_show/999999999';
  const e = await readError(c, uri);
  // Resource not found: -32002 before 2026-07-28, -32602 from it on (SEP-2164).
  const want = MODERN ? -32602 : -32002;
  expect(e.code === want, `code ${e.code}, want ${want}: error=${show(e)}`);
  expect(e.data?.uri === uri, `error.data.uri ${show(e.data?.uri)}, want the URI sent: error=${show(e)}`);
});

const refIndex = { type: 'ref/resource', uri: T_INDEX };
check('complete sort', async () => {
  const all = completionValues(await c.complete({ ref: refIndex, argument: { name: 'sort', value: '' } }));
  expect(sameSet(all, ['name', 'created_at']), `sort "" -> ${show(all)}, want name, created_at`);
  const cr = completionValues(await c.complete({ ref: refIndex, argument: { name: 'sort', value: 'cr' } }));
  expect(sameSet(cr, ['created_at']), `sort "cr" -> ${show(cr)}, want [created_at]`);
});

check('complete direction', async () => {
  const d = completionValues(await c.complete({ ref: refIndex, argument: { name: 'direction', value: 'd' } }));
  expect(sameSet(d, ['desc']), `direction "d" -> ${show(d)}, want [desc]`);
});

check('complete orders_between status', async () => {
  const ref = { type: 'ref/resource', uri: T_ORDERS };
  const all = completionValues(await c.complete({ ref, argument: { name: 'status', value: '' } }));
  expect(sameSet(all, ['open', 'paid', 'cancelled']), `status "" -> ${show(all)}, want open, paid, cancelled`);
  const p = completionValues(await c.complete({ ref, argument: { name: 'status', value: 'p' } }));
  expect(sameSet(p, ['paid']), `status "p" -> ${show(p)}, want [paid]`);
});

// A completion whose reference is an expanded URI that a read refuses (an
// id that is no integer, a path segment short) answers the read's error,
// code, message and data alike, rather than completing.
check('complete of a URI its read refuses answers the read error', async () => {
  for (const [uri, name] of [['app://customers_show/abc', 'id'], ['app://orders_between/2024-01-01', 'status']]) {
    const r = await readError(c, uri);
    const e = await wireError(c, uri, () => c.complete({ ref: { type: 'ref/resource', uri }, argument: { name, value: '' } }));
    expect(e.code === r.code && e.message === r.message && show(e.data) === show(r.data),
      `complete ${uri}: ${show(e)}, want the read's ${show(r)}`);
  }
});

// Watching. The search token is unique to this run, so nothing else that
// writes to the same server can match it.
const liveTok = token();
const liveURI = `app://customers_index?search=live%20${liveTok}`;
let subscribed = false;

check(MODERN ? 'subscriptions/listen acknowledges the URI' : 'resources/subscribe', async () => {
  const acked = await c.subscribe([liveURI]);
  expect(acked.includes(liveURI), `acknowledged ${show(acked)}, want it to include ${liveURI}`);
  subscribed = true;
});

if (MODERN) {
  check('subscriptions/listen leaves out an invalid URI', async () => {
    const bad = 'app://customers_index?per_page=0';
    const good = `app://customers_index?search=other%20${liveTok}`;
    const acked = await c.subscribe([good, bad]);
    expect(acked.includes(good) && !acked.includes(bad), `acknowledged ${show(acked)}, want ${show([good])} without ${bad}`);
  });
}

check('create matching -> exactly one resources/updated with the URI sent', async () => {
  expect(subscribed, 'not subscribed');
  c.updated.length = 0;
  await createCustomer(c, `Rc Live ${liveTok}`, `live.${liveTok}@example.test`);
  const t0 = Date.now();
  const got = await waitFor(() => c.updated.includes(liveURI), NOTIFY_MS);
  expect(got, `no notifications/resources/updated for ${liveURI} within ${NOTIFY_MS} ms (got ${show(c.updated)})`);
  const after = Date.now() - t0;
  await sleep(GRACE_MS); // a second one must not follow
  const mine = c.updated.filter((u) => u === liveURI);
  const others = c.updated.filter((u) => u !== liveURI);
  expect(mine.length === 1, `${mine.length} notifications for ${liveURI} (first after ${after} ms), want exactly 1`);
  expect(others.length === 0, `unexpected notifications for ${show(others)}`);
});

check('create non-matching -> no resources/updated', async () => {
  expect(subscribed, 'not subscribed');
  c.updated.length = 0;
  await createCustomer(c, `Rc Other ${token()}`, `other.${token()}@example.test`);
  await sleep(GRACE_MS);
  expect(c.updated.length === 0, `got ${show(c.updated)} within ${GRACE_MS} ms, want none`);
});

if (!MODERN) {
  check('resources/unsubscribe -> create matching -> no resources/updated', async () => {
    expect(subscribed, 'not subscribed');
    await c.unsubscribe(liveURI);
    c.updated.length = 0;
    await createCustomer(c, `Rc Live ${liveTok} again`, `again.${liveTok}@example.test`);
    await sleep(GRACE_MS);
    expect(c.updated.length === 0, `got ${show(c.updated)} within ${GRACE_MS} ms after unsubscribing, want none`);
  });
}

// --------------------------------------------------------------------- main

let current = 0;
const deadline = setTimeout(() => {
  fail(checks[current].name, `run deadline of ${DEADLINE_MS} ms passed during this check`);
  for (const ch of checks.slice(current + 1)) fail(ch.name, 'not run: run deadline passed');
  summaryAndExit();
}, DEADLINE_MS);

function summaryAndExit() {
  clearTimeout(deadline);
  if (failed && c?.stderrTail?.length) {
    console.error(`--- ${label}: last stderr of the stdio server ---\n${c.stderrTail.join('').slice(-2000)}`);
  }
  process.exit(failed ? 1 : 0);
}

for (current = 0; current < checks.length; current++) {
  const ch = checks[current];
  if (!c && ch.name !== 'connect') {
    fail(ch.name, 'not run: not connected');
    continue;
  }
  try {
    await ch.fn();
    pass(ch.name);
  } catch (e) {
    fail(ch.name, describeError(e));
  }
}
for (const close of closers) await Promise.race([close().catch(() => {}), sleep(2000)]);
await Promise.race([c?.close().catch(() => {}), sleep(3000)]);
summaryAndExit();
