// Small wire readers shared by the self-tests: a raw HTTP client that keeps every byte and the arrival
// time of each piece, an SSE parser and an NDJSON parser written to the specs (not to our encoders).

import http from 'node:http';

/**
 * Sends one request and collects the raw response, never throwing on a cut connection.
 * @param {string} baseUrl
 * @param {{method?: string, path: string, headers?: Record<string,string>, body?: any}} req
 * @returns {Promise<{status: number, headers: object, bytes: Buffer, pieces: {at: number, bytes: Buffer}[], error: Error|null, elapsedMs: number}>}
 */
export function rawRequest(baseUrl, { method = 'POST', path, headers = {}, body }) {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, baseUrl), { method, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const pieces = [];
      const done = (error) =>
        resolve({ status: res.statusCode, headers: res.headers, bytes: Buffer.concat(pieces.map((p) => p.bytes)), pieces, error, elapsedMs: Date.now() - started });
      res.on('data', (bytes) => pieces.push({ at: Date.now() - started, bytes }));
      res.on('end', () => done(null));
      res.on('error', (err) => done(err));
      res.on('aborted', () => done(new Error('aborted')));
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/**
 * Parses an SSE stream as the WHATWG spec says: events end at a blank line; `event:` and `data:` fields
 * (one optional space after the colon); several `data:` lines join with \n; comments start with ':'.
 * @param {string} text
 * @returns {{event: string, data: string}[]}
 */
export function parseSse(text) {
  const events = [];
  let event = '';
  let data = [];
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === '') {
      if (data.length) events.push({ event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    if (field === 'data') data.push(value);
  }
  return events;
}

/** Parses newline-delimited JSON; every non-empty line must be one JSON value. */
export function parseNdjson(text) {
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line));
}
