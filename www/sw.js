// Memoire's service worker: keeps the app's own files so the app opens with the network off, and
// touches nothing else.
// - FILES is the build's list of its files, by exact path relative to this file (scripts/stamp-sw.mjs
//   writes it, with the build id, after every other build step): index.html, the hashed js, wasm
//   (the chunks fetched on first use included) and css, the manifest and the icons. Only these are
//   cached, and only by exact URL (no query string): an API, a reverse-proxied CouchDB, `/models` or
//   any other path under the scope goes to the network untouched (the worker does not answer it).
// - Install fetches every file of FILES into a cache named after the build; a file that does not
//   come back 200 (index.html: 200 `text/html`) fails the install, so the old worker and its cache
//   stay. config.json (a deployment's, optional) is cached when there is one.
// - A new build waits while tabs of the old one are open (no skipWaiting on install): the page shows
//   "A new version is ready — Reload", and Reload posts "skipWaiting". Old builds' caches are kept
//   while a tab that started under them is open (their lazy chunks are served from them by exact
//   URL), and deleted once none is left.
// - Navigations to the app's own page (the scope root or index.html) get this build's own page from
//   its cache at once (the App Shell: a returning start never waits on the network, on a slow link a
//   round trip or more); a new build is taken up through the waiting worker ("A new version is
//   ready — Reload", or the next start once no tab of this build is open). Only when the cache lost
//   the page does the network answer, and a 200 `text/html` answer is kept again. Other navigations
//   (config.json or an icon opened in a tab) are not answered: the network's answer, never kept.
// - config.json is served from the cache and refreshed for the next start.
// - Requests to other origins (the agent endpoint) are never touched.
const BUILD = "__MEMOIRE_BUILD__";
const CACHE = `memoire-shell-${BUILD}`;
const PREFIX = "memoire-shell-";
const FILES = ["__MEMOIRE_FILES__"];
// A file name that carries a build id (`memoire-<id>.js`, `split_sync-<id>.wasm`, `style-<id>.css`):
// one of an older build's files, which a tab of that build may still ask for.
const HASHED = /^[\w.-]+-[0-9a-f]{16}(?:_bg)?\.(?:js|wasm|css)$/;
// Where the ids of the tabs that started under an older build are kept until they are gone.
const OLD_TABS = "memoire-old-tabs";

self.addEventListener("install", (event) => {
  event.waitUntil(precache());
});

async function precache() {
  const cache = await caches.open(CACHE);
  try {
    await Promise.all(
      FILES.map(async (url) => {
        const res = await fetch(url, { cache: "no-store" });
        if (res.status !== 200) throw new Error(`sw: ${url} answered ${res.status}`);
        if (url === "index.html" && !isHtml(res)) throw new Error("sw: index.html is not text/html");
        await cache.put(url, res);
      })
    );
  } catch (err) {
    // The install fails: the old worker (and its cache) stays; nothing half-made is left.
    await caches.delete(CACHE);
    throw err;
  }
  try {
    const config = await fetch("config.json", { cache: "no-store" });
    if (config.ok) await cache.put("config.json", config);
  } catch (_) {
    // No config.json: the app uses its built-in defaults.
  }
}

function isHtml(res) {
  return res.status === 200 && (res.headers.get("content-type") || "").toLowerCase().startsWith("text/html");
}

self.addEventListener("message", (event) => {
  if (event.data === "skipWaiting") self.skipWaiting();
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      // The caches there are now are older builds' (or of builds that never took over), and every
      // open tab started under one of them (this build was not active yet): both are noted, and
      // those caches go once none of those tabs is left. (Only the newest worker deletes, and only
      // what it noted: an older worker still running never touches the cache of the one waiting.)
      const older = (await caches.keys()).filter((n) => n.startsWith(PREFIX) && n !== CACHE);
      if (older.length > 0) {
        const tabs = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
        const kept = await caches.open(OLD_TABS);
        await kept.put("old", new Response(JSON.stringify({ build: CACHE, tabs: tabs.map((c) => c.id), caches: older })));
      }
      await dropOldBuilds();
      // The page comes from the cache: a navigation preload (which an older worker turned on) would
      // only send a request nobody reads.
      if (self.registration.navigationPreload) await self.registration.navigationPreload.disable();
      await self.clients.claim();
    })()
  );
});

// Deletes the older builds' caches noted on activate once no tab that started under them is open.
let checked = false;
async function dropOldBuilds() {
  // (caches.match, not caches.open: nothing noted, no cache made.)
  const hit = await caches.match("old", { cacheName: OLD_TABS });
  const old = hit ? await hit.json() : null;
  if (old && old.build === CACHE) {
    for (const id of old.tabs) if (await self.clients.get(id)) return;
    for (const name of old.caches) if (name !== CACHE) await caches.delete(name);
    await caches.delete(OLD_TABS);
  }
  checked = true;
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  const scope = new URL(self.registration.scope);
  if (!url.pathname.startsWith(scope.pathname)) return;
  const rel = url.pathname.slice(scope.pathname.length);
  if (!checked) event.waitUntil(dropOldBuilds().catch(() => {}));
  if (req.mode === "navigate") {
    if (rel === "" || rel === "index.html") event.respondWith(shell(event));
    // Any other page (config.json, an icon, an API opened in a tab) is not answered: the network's
    // answer as it is, never kept.
    return;
  }
  if (url.search) return;
  if (rel === "config.json") event.respondWith(cachedThenRefreshed(event, "config.json"));
  else if (FILES.includes(rel)) event.respondWith(precached(req));
  else if (HASHED.test(rel)) event.respondWith(olderBuilds(req));
});

// This build's page from its cache; when the cache lost it (the browser evicted it), the network's,
// kept again if it is a 200 `text/html` answer.
async function shell(event) {
  const hit = await caches.match("index.html", { cacheName: CACHE });
  if (hit) return hit;
  const res = await fetch(event.request);
  if (isHtml(res)) {
    const copy = res.clone();
    event.waitUntil(caches.open(CACHE).then((cache) => cache.put("index.html", copy)));
  }
  return res;
}

// One of this build's files: from its cache, else (a cache the browser evicted) the network's,
// kept again.
async function precached(req) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(req);
  if (hit) return hit;
  const res = await fetch(req);
  if (res.status === 200 && res.type === "basic") await cache.put(req, res.clone());
  return res;
}

// A file of an older build, asked for by a tab that still runs it: from that build's cache (the
// host may serve the new build only), else the network's answer, never cached.
async function olderBuilds(req) {
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX)) continue;
    const hit = await (await caches.open(name)).match(req);
    if (hit) return hit;
  }
  return fetch(req);
}

// config.json: the cached copy at once, so a returning start never waits on the network for it (a
// slow link would hold the first screen for a round trip, a stalled one for the app's 5 s timeout);
// the network's copy replaces it meanwhile, for the next start (a deployment's change shows one start
// later). With nothing cached yet, the network's answer, or no config when there is no network.
async function cachedThenRefreshed(event, key) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(key);
  const refresh = fetch(event.request).then(async (res) => {
    if (res.ok) await cache.put(key, res.clone());
    else if (res.status === 404) await cache.delete(key);
    return res;
  });
  if (hit) {
    event.waitUntil(refresh.catch(() => {}));
    return hit;
  }
  try {
    return await refresh;
  } catch (_) {
    return new Response("{}", { headers: { "content-type": "application/json" } });
  }
}
