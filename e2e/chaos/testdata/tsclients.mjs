// TypeScript MCP clients for the chaos test (e2e/chaos): applications on
// the official clients that watch customers through the test's proxies and
// re-read what they are told changed. One process runs them all:
//
//   node tsclients.mjs '<JSON: [{name, kind, url, uris, fixResume}, ...]>'
//
// kind is one of
//   sdk1-legacy     @modelcontextprotocol/sdk 1.x, 2025-11-25 (a GET stream)
//   client2-legacy  @modelcontextprotocol/client 2.x, 2025-11-25
//   client2-modern  @modelcontextprotocol/client 2.x pinned to 2026-07-28
//                   (one subscriptions/listen stream for all its URIs)
//
// It prints one JSON object a line, for the Go test to read:
//   {c, ev: "note", uri, t}                          notifications/resources/updated
//   {c, ev: "read", uri, t0, t1, name, version}      a finished resources/read
//   {c, ev: "open", kind, t, uris?, lei?}            a stream opened: first, resume,
//                                                    afresh, relisten
//   {c, ev: "id", id, t}                             an event id on a GET stream
//   {c, ev: "count", what}                           retried, restored, dups
//   {c, ev: "ready"}                                 subscribed, every URI read once
//   {c, ev: "problem", msg}                          something no cut explains
//   {ev: "closed"}                                   every client closed; exits 0
// Times are milliseconds since the epoch. It closes its clients and exits
// when its standard input ends.
//
// What each library does on a dropped connection, and what the
// application adds:
//   - 2025-11-25 (both packages): the transport reopens a dropped GET
//     stream after 1 s with Last-Event-ID, the last event id that stream
//     carried; one that drops before it carried an event is reopened
//     without any (typescript-sdk issue #2499), losing what the dropped
//     stream swallowed. The application's fetch puts the session's last id
//     back (fixResume) and counts it as restored. A failed reopening is
//     tried again maxRetries times (2 by default; the application asks for
//     more).
//   - 2026-07-28: Client.listen() does not listen again when its stream
//     drops ("No automatic re-listen"); its `closed` promise says it
//     ended. The application listens again at once, naming in _meta the
//     version it last read of each URI (the transport's send is wrapped
//     for that: listen() takes no _meta), so the server notifies at once
//     what changed meanwhile.
//   - A request cut in flight fails; the application sends it again.

const META_VERSION = 'io.github.mcplive/version';
const META_VERSIONS = 'io.github.mcplive/versions';
const REQUEST_MS = 10000; // one request
const RETRY_MS = 100; // before a failed request is sent again
const CLOSE_MS = 3000; // closing one client
const RECONNECT = { initialReconnectionDelay: 1000, maxReconnectionDelay: 30000, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 };

const now = () => performance.timeOrigin + performance.now();
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const within = (p, ms) => Promise.race([p, sleep(ms)]);
const info = { name: 'mcplive-chaos', version: '0.0.0' };
let stopping = false;

class Watcher {
  constructor(c) {
    this.c = c;
    this.modern = c.kind === 'client2-modern';
    this.versions = new Map(); // URI -> version last read
    this.dirty = new Set(); // URIs to read again
    this.read = new Set(); // URIs read once
    this.lastId = new Map(); // session -> last event id on its GET streams
    this.gets = new Set(); // sessions that opened a GET stream
    this.wakeReader = null;
    this.acked = !this.modern;
    this.readyOnce = false;
    this.sub = null;
  }

  emit(ev, o = {}) {
    out({ c: this.c.name, ev, ...o });
  }

  count(what) {
    this.emit('count', { what });
  }

  // fetch is the transports' fetch: it watches every GET stream of the
  // session, puts back a Last-Event-ID the transport dropped, and passes
  // everything else through.
  fetch = async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers);
    const sid = headers.get('mcp-session-id');
    if (method !== 'GET' || !sid) return fetch(url, init);
    let lei = headers.get('last-event-id');
    const first = !this.gets.has(sid);
    this.gets.add(sid);
    if (!lei && this.lastId.has(sid) && this.c.fixResume) {
      lei = String(this.lastId.get(sid));
      headers.set('last-event-id', lei);
      this.count('restored');
    }
    const kind = lei ? 'resume' : first ? 'first' : 'afresh';
    const res = await fetch(url, { ...init, headers });
    if (!res.ok || !res.body) return res;
    this.emit('open', { kind, t: now(), lei: lei ?? '' });
    const [mine, theirs] = res.body.tee();
    this.scanIds(mine, sid);
    return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  async scanIds(stream, sid) {
    const reader = stream.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).replace(/\r$/, '');
          buf = buf.slice(i + 1);
          if (line.startsWith('id:')) this.sawId(sid, line.slice(3).trim());
        }
      }
    } catch {
      // the stream was cut: the transport sees it too
    }
  }

  sawId(sid, id) {
    this.emit('id', { id, t: now() });
    const n = Number(id);
    if (!Number.isSafeInteger(n)) {
      this.emit('problem', { msg: `GET stream event id ${JSON.stringify(id)} is not a number` });
      return;
    }
    if (this.lastId.has(sid) && n <= this.lastId.get(sid)) this.count('dups');
    else this.lastId.set(sid, n);
  }

  async connect() {
    const { url } = this.c;
    if (this.c.kind === 'sdk1-legacy') {
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      const { ResourceUpdatedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
      this.client = new Client(info, {});
      this.transport = new StreamableHTTPClientTransport(new URL(url), { fetch: this.fetch, reconnectionOptions: RECONNECT });
      this.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => this.notified(n.params.uri));
    } else {
      const m = await import('@modelcontextprotocol/client');
      this.client = new m.Client(info, this.modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
      this.transport = new m.StreamableHTTPClientTransport(new URL(url), { fetch: this.fetch, reconnectionOptions: RECONNECT });
      this.client.setNotificationHandler('notifications/resources/updated', (n) => this.notified(n.params.uri));
      if (this.modern) {
        // listen() takes no _meta: name the versions as the request goes out.
        const send = this.transport.send.bind(this.transport);
        this.transport.send = (msg, opts) => {
          if (msg?.method === 'subscriptions/listen') {
            const seen = {};
            for (const uri of msg.params?.notifications?.resourceSubscriptions ?? []) {
              if (this.versions.has(uri)) seen[uri] = this.versions.get(uri);
            }
            msg = { ...msg, params: { ...msg.params, _meta: { ...msg.params?._meta, [META_VERSIONS]: seen } } };
          }
          return send(msg, opts);
        };
      }
    }
    this.client.onerror = () => {}; // stream errors: the cuts, and the transport recovers
    await this.client.connect(this.transport, { timeout: REQUEST_MS });
  }

  async start() {
    for (;;) {
      try {
        await this.connect();
        break;
      } catch (e) {
        if (stopping) return;
        this.emit('problem', { msg: `connect: ${e?.message ?? e}` });
        await sleep(RETRY_MS);
      }
    }
    if (this.modern) {
      this.listening = this.listenLoop();
    } else {
      for (const uri of this.c.uris) {
        await this.retry(() => this.client.subscribeResource({ uri }, { timeout: REQUEST_MS }));
      }
    }
    for (const uri of this.c.uris) this.dirty.add(uri);
    this.reading = this.reader();
  }

  // retry calls fn until it succeeds or the process stops.
  async retry(fn) {
    while (!stopping) {
      try {
        return await fn();
      } catch {
        if (stopping) return;
        this.count('retried');
        await sleep(RETRY_MS);
      }
    }
  }

  // listenLoop keeps one listen stream open for all the URIs: when it
  // ends, it listens again, naming the versions last read.
  async listenLoop() {
    let first = true;
    while (!stopping) {
      let sub;
      try {
        sub = await this.client.listen({ resourceSubscriptions: this.c.uris }, { timeout: REQUEST_MS });
      } catch {
        if (stopping) return;
        this.count('retried');
        await sleep(RETRY_MS);
        continue;
      }
      const opened = now();
      this.emit('open', { kind: first ? 'first' : 'relisten', t: opened, uris: this.c.uris });
      const honored = sub.honoredFilter?.resourceSubscriptions ?? [];
      if (honored.length !== this.c.uris.length) {
        this.emit('problem', { msg: `listen acknowledged ${JSON.stringify(honored)}, want ${JSON.stringify(this.c.uris)}` });
      }
      if (first) {
        first = false;
        this.acked = true;
        this.checkReady();
      }
      this.sub = sub;
      await sub.closed;
      if (stopping) return;
      // A stream ended at once is not listened to again at once.
      if (now() - opened < RETRY_MS) await sleep(RETRY_MS);
    }
  }

  notified(uri) {
    this.emit('note', { uri, t: now() });
    this.dirty.add(uri);
    this.wake();
  }

  wake() {
    const w = this.wakeReader;
    this.wakeReader = null;
    w?.();
  }

  async reader() {
    while (!stopping) {
      if (this.dirty.size === 0) {
        await new Promise((r) => (this.wakeReader = r));
        continue;
      }
      const uri = this.dirty.values().next().value;
      this.dirty.delete(uri);
      await this.readURI(uri);
    }
  }

  async readURI(uri) {
    const id = Number(uri.slice(uri.lastIndexOf('/') + 1));
    while (!stopping) {
      const t0 = now();
      let res;
      try {
        res = await this.client.readResource({ uri }, this.c.kind === 'sdk1-legacy' ? { timeout: REQUEST_MS } : { timeout: REQUEST_MS, cacheMode: 'bypass' });
      } catch {
        if (stopping) return;
        this.count('retried');
        await sleep(RETRY_MS);
        continue;
      }
      const t1 = now();
      let cust;
      try {
        cust = JSON.parse(res.contents[0].text);
      } catch {}
      const version = res?._meta?.[META_VERSION];
      if (res?.contents?.length !== 1 || cust?.id !== id || !cust?.name || typeof version !== 'string' || !version) {
        this.emit('problem', { msg: `read ${uri}: ${JSON.stringify(res).slice(0, 300)} is not customer ${id} with a name and a _meta version` });
        await sleep(RETRY_MS);
        continue;
      }
      this.versions.set(uri, version);
      this.read.add(uri);
      this.emit('read', { uri, t0, t1, name: cust.name, version });
      this.checkReady();
      return;
    }
  }

  checkReady() {
    if (this.readyOnce || !this.acked || this.read.size !== this.c.uris.length) return;
    this.readyOnce = true;
    this.emit('ready');
  }

  async close() {
    this.wake();
    try {
      await within(this.sub?.close?.(), CLOSE_MS);
      if (!this.modern) await within(this.transport?.terminateSession?.(), CLOSE_MS);
      await within(this.client?.close?.(), CLOSE_MS);
    } catch {}
  }
}

process.on('unhandledRejection', (e) => out({ ev: 'problem', msg: `unhandled rejection: ${e?.stack ?? e}` }));

const watchers = JSON.parse(process.argv[2]).map((c) => new Watcher(c));
for (const w of watchers) w.start();

process.stdin.resume();
process.stdin.on('end', async () => {
  stopping = true;
  await Promise.all(watchers.map((w) => w.close()));
  out({ ev: 'closed' });
  process.exit(0);
});
