// Memoire's service worker: caches the app shell so the app opens with the network off.
// - The cache name carries the build id (written into this file by the Trunk post-build hook), so a
//   new build gets a new cache and the old ones are deleted on activate.
// - Install precaches index.html and every asset it references (hashed js/wasm/css), the wasm chunks
//   fetched on first use (LAZY), the manifest, the icon and config.json when the deployment has one. Only relative URLs are followed, so the
//   same dist/ works under any sub-path (the scope is the directory sw.js is served from).
// - Navigations are network-first (a new build is picked up at once; navigation preload sends the
//   request while the worker starts) with the cached shell as the fallback; hashed assets are
//   cache-first; config.json is served from the cache and refreshed for the next start.
// - Requests to other origins (the agent endpoint) are never touched.
const BUILD = "__MEMOIRE_BUILD__";
const CACHE = `memoire-shell-${BUILD}`;
const SHELL = ["./", "index.html", "manifest.webmanifest", "icons/icon.svg"];
// The wasm chunks fetched on first use (import, sync, memory, export; scripts/place-wasm.mjs writes
// their names here): index.html does not name them, and offline they must be here all the same.
const LAZY = ["__MEMOIRE_LAZY__"];

self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      const index = await fetch("index.html", { cache: "no-store" });
      const html = await index.clone().text();
      await cache.put("index.html", index.clone());
      await cache.put("./", index);
      const assets = new Set(SHELL.slice(2));
      for (const url of referencedAssets(html)) assets.add(url);
      for (const url of LAZY) assets.add(url);
      await cache.addAll([...assets]);
      try {
        const config = await fetch("config.json", { cache: "no-store" });
        if (config.ok) await cache.put("config.json", config);
      } catch (_) {
        // No config.json: the app uses its built-in defaults.
      }
      await self.skipWaiting();
    })()
  );
});

// Every same-origin file index.html refers to: href/src attributes (quoted or not: the release build
// minifies the html) and the module script's quoted paths (the js glue and the wasm it loads).
function referencedAssets(html) {
  const found = [];
  const attr = /\b(?:href|src)=(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/gi;
  for (const m of html.matchAll(attr)) found.push(m[1] ?? m[2] ?? m[3]);
  for (const m of html.matchAll(/["'`]((?:\.\/)?[\w@./-]+\.(?:js|mjs|wasm|css))["'`]/g)) found.push(m[1]);
  return found
    .map((url) => url.split(/[?#]/)[0])
    // config.json is optional (a deployment may have none): cached apart, below, never by addAll.
    .filter((url) => url && url !== "sw.js" && url !== "config.json" && !/^[a-z][a-z0-9+.-]*:/i.test(url) && !url.startsWith("//") && !url.startsWith("/"))
    .map((url) => url.replace(/^\.\//, ""));
}

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith("memoire-shell-") && name !== CACHE) await caches.delete(name);
      }
      // Navigations are network-first: with navigation preload their request goes out while the
      // worker starts, not after.
      if (self.registration.navigationPreload) await self.registration.navigationPreload.enable();
      await self.clients.claim();
    })()
  );
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  const scope = new URL(self.registration.scope);
  if (!url.pathname.startsWith(scope.pathname)) return;
  const rel = url.pathname.slice(scope.pathname.length);
  if (req.mode === "navigate") {
    event.respondWith(networkFirst(event, "index.html", event.preloadResponse));
  } else if (rel === "config.json") {
    event.respondWith(cachedThenRefreshed(event, "config.json"));
  } else {
    event.respondWith(cacheFirst(req));
  }
});

// The network's answer (the navigation preload's when there is one) goes to the page at once; the
// copy kept for offline is written meanwhile.
async function networkFirst(event, fallbackKey, preloaded) {
  const req = event.request;
  const cache = await caches.open(CACHE);
  try {
    const res = (await preloaded) || (await fetch(req));
    if (res.ok) event.waitUntil(cache.put(fallbackKey, res.clone()));
    return res;
  } catch (err) {
    const hit = (await cache.match(fallbackKey)) || (await cache.match(req));
    if (hit) return hit;
    throw err;
  }
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

async function cacheFirst(req) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(req, { ignoreSearch: true });
  if (hit) return hit;
  const res = await fetch(req);
  if (res.ok && res.type === "basic") await cache.put(req, res.clone());
  return res;
}
