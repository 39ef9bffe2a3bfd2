// The s3hpc web console (docs/CONSOLE.md). Plain JavaScript, no framework, nothing fetched
// from elsewhere. S3 requests go to /s3/... on this origin: the gateway runs them as the
// logged-in account (its session cookie), with the same authorization as its S3 endpoint. The
// secret never comes back to this page; state-changing requests carry the session's CSRF token.
'use strict';

const S = { csrf: null, me: null, pageSize: 100, uploading: 0 };
const PART_SIZE = 8 * 1024 * 1024;
const MULTIPART_FROM = 16 * 1024 * 1024;
const PARALLEL_PARTS = 4;

// ---------- small helpers ----------
function $(id) { return document.getElementById(id); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
function human(n) {
  if (n === null || n === undefined || isNaN(n)) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0; let x = Number(n);
  while (x >= 1024 && i < u.length - 1) { x /= 1024; i++; }
  return (i ? x.toFixed(x < 10 ? 2 : 1) : String(x)) + ' ' + u[i];
}
function when(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return s;
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
function encKey(k) { return k.split('/').map(encodeURIComponent).join('/'); }
function s3path(bucket, key, query) {
  let p = '/s3/' + (bucket ? encodeURIComponent(bucket) : '');
  if (key) p += '/' + encKey(key);
  if (query) p += '?' + query;
  return p;
}
function qs(obj) {
  return Object.entries(obj).filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => v === '' ? encodeURIComponent(k) : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
}
function say(text, info) {
  const m = $('msg');
  m.textContent = text; m.className = info ? 'info' : ''; m.hidden = !text;
  if (info) setTimeout(() => { if (m.textContent === text) m.hidden = true; }, 4000);
}
function xmlText(doc, tag, node) {
  const e = (node || doc).getElementsByTagName(tag)[0];
  return e ? e.textContent : null;
}
function kids(node, tag) { return Array.from(node.getElementsByTagName(tag)); }
function esc(s) { return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }

// CRC32 (S3 asks bodies of some requests for a checksum: x-amz-checksum-crc32).
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1; t[n] = c >>> 0; }
  return t;
})();
function crc32b64(bytes) {
  let c = 0xFFFFFFFF;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xFF] ^ (c >>> 8);
  c = (c ^ 0xFFFFFFFF) >>> 0;
  return btoa(String.fromCharCode(c >>> 24, (c >>> 16) & 255, (c >>> 8) & 255, c & 255));
}

class S3Error extends Error {
  constructor(status, code, message) { super(`${code}: ${message}`); this.status = status; this.code = code; }
}

// ---------- requests ----------
async function call(method, path, opts) {
  opts = opts || {};
  const headers = Object.assign({}, opts.headers);
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = S.csrf || '';
  const r = await fetch(path, { method, headers, body: opts.body, credentials: 'same-origin', cache: 'no-store' });
  if (r.status === 401) { showLogin(); throw new S3Error(401, 'NotLoggedIn', 'Log in to the console first'); }
  return r;
}
async function fail(r) {
  const t = await r.text();
  let code = String(r.status), message = t;
  try {
    const j = JSON.parse(t); code = j.error; message = j.message;
  } catch (_) {
    const d = new DOMParser().parseFromString(t, 'application/xml');
    if (xmlText(d, 'Code')) { code = xmlText(d, 'Code'); message = xmlText(d, 'Message') || ''; }
  }
  throw new S3Error(r.status, code, message);
}
// An S3 request; returns the response and, for XML answers, the parsed document.
async function s3(method, bucket, key, query, opts) {
  opts = opts || {};
  if (opts.xml !== undefined) {
    const bytes = new TextEncoder().encode(opts.xml);
    opts.body = bytes;
    opts.headers = Object.assign({ 'content-type': 'application/xml', 'x-amz-checksum-crc32': crc32b64(bytes) }, opts.headers);
  }
  const r = await call(method, s3path(bucket, key, query), opts);
  if (!r.ok && !(opts.allow || []).includes(r.status)) await fail(r);
  let doc = null, text = null;
  if (method !== 'HEAD' && r.status !== 204) {
    text = await r.text();
    if (text && (r.headers.get('content-type') || '').includes('xml')) doc = new DOMParser().parseFromString(text, 'application/xml');
  }
  return { r, doc, text };
}
async function apiJSON(method, path, body) {
  const r = await call(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  if (!r.ok) await fail(r);
  return r.json();
}
function guard(fn) {
  return async (...a) => {
    try { say(''); await fn(...a); } catch (e) { if (e.code !== 'NotLoggedIn') say(e.message || String(e)); }
  };
}

// ---------- login ----------
function showLogin() {
  S.csrf = null; S.me = null;
  $('main').replaceChildren(); $('uploads').replaceChildren(); $('login').hidden = false; $('nav').hidden = true; $('logout').hidden = true; $('who').textContent = '';
}
function loggedIn(me) {
  S.me = me; S.csrf = me.csrf;
  $('login').hidden = true; $('nav').hidden = false; $('logout').hidden = false;
  $('nav-admin').hidden = !me.admin;
  for (const n of ['nav-accounts', 'nav-usage', 'nav-reports']) $(n).hidden = !me.admin;
  $('nav-keys').hidden = !me.keys;
  $('who').textContent = (me.name || me.accountId || me.accessKey) + (me.admin ? ' (admin)' : '');
}
async function boot() {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const err = $('login-error'); err.hidden = true;
    const r = await fetch('/api/login', {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ accessKey: $('login-key').value, secretKey: $('login-secret').value }),
    });
    $('login-secret').value = '';
    if (!r.ok) {
      let m = 'Login failed'; try { m = (await r.json()).message; } catch (_) { /* keep */ }
      err.textContent = m; err.hidden = false; return;
    }
    loggedIn(await r.json());
    route();
  });
  $('logout').addEventListener('click', guard(async () => {
    await apiJSON('POST', '/api/logout', {});
    showLogin(); location.hash = '#/';
  }));
  window.addEventListener('hashchange', route);
  window.addEventListener('beforeunload', (e) => { if (S.uploading) e.preventDefault(); });
  const r = await fetch('/api/session', { credentials: 'same-origin', cache: 'no-store' });
  if (r.ok) { loggedIn(await r.json()); route(); } else showLogin();
}

// ---------- routing ----------
function route() {
  if (!S.me) return;
  say('');
  if (!location.hash.startsWith('#/b/')) $('uploads').replaceChildren();
  const h = decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
  const m = h.match(/^\/(b|v|s)\/([^/]+)\/?(.*)$/);
  if (m && m[1] === 'b') return guard(() => browse(m[2], m[3], null))();
  if (m && m[1] === 'v') return guard(() => versions(m[2], m[3]))();
  if (m && m[1] === 's') return guard(() => settings(m[2]))();
  if (h === '/admin') return guard(adminPage)();
  if (h === '/keys') return guard(keysPage)();
  if (h === '/accounts') return guard(accountsPage)();
  if (h === '/usage') return guard(usagePage)();
  if (h === '/reports') return guard(reportsPage)();
  return guard(buckets)();
}
function go(hash) { if (location.hash === hash) route(); else location.hash = hash; }
function linkB(bucket, prefix) { return '#/b/' + encodeURIComponent(bucket) + '/' + encodeURIComponent(prefix || ''); }

// ---------- buckets ----------
async function buckets() {
  const { doc } = await s3('GET', '', '', '');
  const rows = kids(doc, 'Bucket').map((b) => {
    const name = xmlText(doc, 'Name', b);
    const size = el('td', { class: 'num' }, el('button', { class: 'secondary', type: 'button', onclick: (e) => sizeOf(name, '', e.target) }, 'size'));
    return el('tr', { 'data-bucket': name },
      el('td', {}, el('a', { class: 'folder', href: linkB(name, '') }, name)),
      el('td', {}, when(xmlText(doc, 'CreationDate', b))),
      size,
      el('td', { class: 'actions' },
        el('a', { href: '#/s/' + encodeURIComponent(name) }, 'settings'),
        el('button', { class: 'danger', type: 'button', onclick: guard(async () => {
          if (!confirm(`Delete the bucket ${name}? It must be empty.`)) return;
          await s3('DELETE', name, '', ''); say(`Bucket ${name} deleted`, true); buckets();
        }) }, 'delete')));
  });
  const name = el('input', { id: 'new-bucket', placeholder: 'new-bucket-name', pattern: '[a-z0-9.-]{3,63}' });
  $('main').replaceChildren(
    el('h1', {}, 'Buckets'),
    el('div', { class: 'toolbar' },
      name,
      el('button', { id: 'create-bucket', type: 'button', onclick: guard(async () => {
        const n = name.value.trim(); if (!n) return;
        await s3('PUT', n, '', ''); say(`Bucket ${n} created`, true); buckets();
      }) }, 'Create bucket')),
    rows.length ? el('table', { id: 'buckets' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Bucket'), el('th', {}, 'Created'), el('th', { class: 'num' }, 'Size'), el('th', {}))),
      el('tbody', {}, rows)) : el('p', { class: 'hint' }, 'No buckets yet.'));
}

// The total size under a prefix: pages of 1000 keys, up to 100,000 keys (then "at least").
async function sizeOf(bucket, prefix, button) {
  const cell = button.parentNode;
  cell.textContent = 'counting…';
  let token = null, bytes = 0, n = 0;
  try {
    for (let i = 0; i < 100; i++) {
      const { doc } = await s3('GET', bucket, '', qs({ 'list-type': '2', prefix: prefix || undefined, 'max-keys': '1000', 'continuation-token': token || undefined }));
      for (const c of kids(doc, 'Contents')) { bytes += Number(xmlText(doc, 'Size', c)); n++; }
      token = xmlText(doc, 'NextContinuationToken');
      if (xmlText(doc, 'IsTruncated') !== 'true' || !token) { token = null; break; }
    }
    cell.textContent = `${token ? '≥ ' : ''}${human(bytes)} (${n}${token ? '+' : ''} objects)`;
  } catch (e) { cell.textContent = ''; say(e.message); }
}

// ---------- objects ----------
async function browse(bucket, prefix, token, stack) {
  stack = stack || [];
  const q = { 'list-type': '2', delimiter: '/', 'max-keys': String(S.pageSize), prefix: prefix || undefined, 'continuation-token': token || undefined };
  const t0 = performance.now();
  const { doc } = await s3('GET', bucket, '', qs(q));
  const ms = Math.round(performance.now() - t0);
  const rows = [];
  for (const p of kids(doc, 'CommonPrefixes')) {
    const full = xmlText(doc, 'Prefix', p);
    const name = full.slice((prefix || '').length);
    rows.push(el('tr', { 'data-prefix': full },
      el('td', {}, el('input', { type: 'checkbox', 'data-prefix': full })),
      el('td', {}, el('a', { class: 'folder', href: linkB(bucket, full) }, name)),
      el('td', { class: 'num' }, el('button', { class: 'secondary', type: 'button', onclick: (e) => sizeOf(bucket, full, e.target) }, 'size')),
      el('td', {}, ''),
      el('td', { class: 'actions' }, el('button', { class: 'danger', type: 'button', onclick: guard(() => deletePrefix(bucket, full, prefix)) }, 'delete'))));
  }
  for (const c of kids(doc, 'Contents')) {
    const key = xmlText(doc, 'Key', c);
    const name = key.slice((prefix || '').length);
    if (!name) continue; // the folder's own marker
    rows.push(el('tr', { 'data-key': key },
      el('td', {}, el('input', { type: 'checkbox', 'data-key': key })),
      el('td', {}, el('a', { class: 'file', href: s3path(bucket, key), download: name.split('/').pop() }, name)),
      el('td', { class: 'num' }, human(Number(xmlText(doc, 'Size', c)))),
      el('td', {}, when(xmlText(doc, 'LastModified', c))),
      el('td', { class: 'actions' },
        el('button', { class: 'secondary', type: 'button', onclick: () => share(bucket, key, null) }, 'share'),
        el('a', { href: '#/v/' + encodeURIComponent(bucket) + '/' + encodeURIComponent(key) }, 'versions'),
        el('button', { class: 'danger', type: 'button', onclick: guard(async () => {
          if (!confirm(`Delete ${key}?`)) return;
          await s3('DELETE', bucket, key, ''); say(`${key} deleted`, true); browse(bucket, prefix, token, stack);
        }) }, 'delete'))));
  }
  const next = xmlText(doc, 'IsTruncated') === 'true' ? xmlText(doc, 'NextContinuationToken') : null;
  const crumbs = [el('a', { href: '#/' }, 'Buckets'), ' / ', el('a', { href: linkB(bucket, '') }, bucket)];
  let acc = '';
  for (const part of (prefix || '').split('/').filter(Boolean)) {
    acc += part + '/';
    crumbs.push(' / ', el('a', { href: linkB(bucket, acc) }, part));
  }
  const files = el('input', { type: 'file', id: 'upload-input', multiple: true });
  const progress = $('uploads');
  const reload = () => browse(bucket, prefix, token, stack);
  files.addEventListener('change', guard(async () => {
    const list = Array.from(files.files);
    progress.replaceChildren();
    await Promise.all(list.map((f) => upload(bucket, (prefix || '') + f.name, f, progress)));
    files.value = '';
    say(`${list.length} file(s) uploaded`, true);
    browse(bucket, prefix, null, []);
  }));
  const size = el('select', { id: 'page-size', onchange: (e) => { S.pageSize = Number(e.target.value); browse(bucket, prefix, null, []); } },
    [100, 500, 1000].map((n) => el('option', { value: n, selected: n === S.pageSize }, `${n} per page`)));
  $('main').replaceChildren(
    el('div', { class: 'crumbs' }, crumbs),
    el('div', { class: 'toolbar' },
      el('label', { class: 'secondary' }, 'Upload files: ', files),
      el('button', { type: 'button', class: 'secondary', id: 'new-folder', onclick: guard(async () => {
        const n = prompt('Folder name'); if (!n) return;
        await s3('PUT', bucket, (prefix || '') + n.replace(/\/+$/, '') + '/', '', { body: '' });
        say(`Folder ${n} created`, true); reload();
      }) }, 'New folder'),
      el('button', { type: 'button', class: 'danger', id: 'delete-selected', onclick: guard(() => deleteSelected(bucket, reload)) }, 'Delete selected'),
      el('span', { class: 'grow' }),
      el('a', { href: '#/s/' + encodeURIComponent(bucket) }, 'Bucket settings'),
      size),
    el('table', { id: 'objects' },
      el('thead', {}, el('tr', {}, el('th', {}), el('th', {}, 'Name'), el('th', { class: 'num' }, 'Size'), el('th', {}, 'Last modified'), el('th', {}))),
      el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: 5, class: 'hint' }, 'Empty.')))),
    el('div', { class: 'toolbar' },
      el('button', { type: 'button', class: 'secondary', id: 'prev-page', disabled: !stack.length, onclick: guard(() => {
        const s = stack.slice(); const prev = s.pop(); return browse(bucket, prefix, prev, s);
      }) }, '← Previous'),
      el('button', { type: 'button', class: 'secondary', id: 'next-page', disabled: !next, onclick: guard(() => browse(bucket, prefix, next, stack.concat([token]))) }, 'Next →'),
      el('span', { class: 'hint', id: 'page-info' }, `page ${stack.length + 1}, ${rows.length} entries, listed in ${ms} ms`)));
}

async function deleteKeys(bucket, keys) {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    const xml = '<Delete><Quiet>true</Quiet>' + batch.map((k) => `<Object><Key>${esc(k)}</Key></Object>`).join('') + '</Delete>';
    const { doc } = await s3('POST', bucket, '', 'delete', { xml });
    const errs = doc ? kids(doc, 'Error') : [];
    if (errs.length) throw new S3Error(200, xmlText(doc, 'Code', errs[0]), `${xmlText(doc, 'Key', errs[0])}: ${xmlText(doc, 'Message', errs[0])} (${errs.length} not deleted)`);
  }
}
async function keysUnder(bucket, prefix) {
  const out = []; let token = null;
  do {
    const { doc } = await s3('GET', bucket, '', qs({ 'list-type': '2', prefix, 'max-keys': '1000', 'continuation-token': token || undefined }));
    for (const c of kids(doc, 'Contents')) out.push(xmlText(doc, 'Key', c));
    token = xmlText(doc, 'IsTruncated') === 'true' ? xmlText(doc, 'NextContinuationToken') : null;
  } while (token);
  return out;
}
async function deletePrefix(bucket, full, prefix) {
  const keys = await keysUnder(bucket, full);
  if (!confirm(`Delete the folder ${full} and its ${keys.length} object(s)?`)) return;
  await deleteKeys(bucket, keys);
  say(`${keys.length} object(s) deleted`, true);
  browse(bucket, prefix, null, []);
}
async function deleteSelected(bucket, reload) {
  const boxes = Array.from(document.querySelectorAll('#objects input[type=checkbox]:checked'));
  let keys = boxes.filter((b) => b.dataset.key).map((b) => b.dataset.key);
  for (const b of boxes.filter((x) => x.dataset.prefix)) keys = keys.concat(await keysUnder(bucket, b.dataset.prefix));
  if (!keys.length || !confirm(`Delete ${keys.length} object(s)?`)) return;
  await deleteKeys(bucket, keys);
  say(`${keys.length} object(s) deleted`, true);
  reload();
}

// ---------- uploads ----------
function xhrPut(path, body, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('PUT', path);
    x.setRequestHeader('x-csrf-token', S.csrf || '');
    x.upload.onprogress = (e) => onProgress(e.loaded);
    x.onload = () => {
      if (x.status === 401) { showLogin(); reject(new S3Error(401, 'NotLoggedIn', '')); return; }
      if (x.status >= 300) {
        const d = new DOMParser().parseFromString(x.responseText, 'application/xml');
        reject(new S3Error(x.status, xmlText(d, 'Code') || x.status, xmlText(d, 'Message') || x.responseText));
        return;
      }
      onProgress(body.size); resolve(x.getResponseHeader('etag'));
    };
    x.onerror = () => reject(new Error('network error'));
    x.send(body);
  });
}
async function upload(bucket, key, file, box) {
  const bar = el('progress', { max: file.size || 1, value: 0 });
  const label = el('span', {}, ` ${key} (${human(file.size)})`);
  const line = el('div', { class: 'progress', 'data-upload': key }, bar, label);
  box.append(line);
  const done = (t) => { label.textContent = ` ${key} (${human(file.size)}) ${t}`; };
  if (file.size < MULTIPART_FROM) {
    await xhrPut(s3path(bucket, key), file, (n) => { bar.value = n; });
    done('done'); return;
  }
  // Resumable: the upload id is kept in this browser (localStorage, per origin) until the upload
  // completes; choosing the same file again (same size and date) after a reload or a network
  // failure sends only the parts the gateway does not have yet (ListParts).
  const rkey = `s3hpc-upload:${bucket}/${key}`;
  const parts = Math.ceil(file.size / PART_SIZE);
  const have = new Map();
  let uploadId = null;
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem(rkey)); } catch (_) { saved = null; }
  if (saved && saved.size === file.size && saved.lastModified === file.lastModified && saved.partSize === PART_SIZE) {
    try {
      let marker = null;
      for (;;) {
        const { doc } = await s3('GET', bucket, key, qs({ uploadId: saved.uploadId, 'part-number-marker': marker || undefined }));
        for (const p of kids(doc, 'Part')) have.set(Number(xmlText(doc, 'PartNumber', p)), { etag: xmlText(doc, 'ETag', p), size: Number(xmlText(doc, 'Size', p)) });
        if (xmlText(doc, 'IsTruncated') !== 'true') break;
        marker = xmlText(doc, 'NextPartNumberMarker');
      }
      uploadId = saved.uploadId;
    } catch (e) {
      if (e.code === 'NotLoggedIn') throw e;
      have.clear(); // gone (completed, aborted or expired): start again
    }
  }
  if (!uploadId) {
    const { doc } = await s3('POST', bucket, key, 'uploads');
    uploadId = xmlText(doc, 'UploadId');
    localStorage.setItem(rkey, JSON.stringify({ uploadId, size: file.size, lastModified: file.lastModified, partSize: PART_SIZE }));
  }
  const sent = new Array(parts).fill(0);
  const etags = new Array(parts);
  const todo = [];
  for (let i = 0; i < parts; i++) {
    const len = Math.min(PART_SIZE, file.size - i * PART_SIZE);
    const h = have.get(i + 1);
    if (h && h.size === len && h.etag) { etags[i] = h.etag; sent[i] = len; } else todo.push(i);
  }
  const resumed = parts - todo.length;
  bar.value = sent.reduce((a, b) => a + b, 0);
  const worker = async () => {
    while (todo.length) {
      const i = todo.shift();
      const blob = file.slice(i * PART_SIZE, Math.min(file.size, (i + 1) * PART_SIZE));
      etags[i] = await xhrPut(s3path(bucket, key, qs({ partNumber: i + 1, uploadId })), blob, (n) => {
        sent[i] = n; bar.value = sent.reduce((a, b) => a + b, 0);
      });
    }
  };
  S.uploading++;
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTS, Math.max(1, todo.length)) }, worker));
    const xml = '<CompleteMultipartUpload>' + etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${esc(e)}</ETag></Part>`).join('') + '</CompleteMultipartUpload>';
    const r = await call('POST', s3path(bucket, key, qs({ uploadId })), { body: xml, headers: { 'content-type': 'application/xml' } });
    const t = await r.text();
    const d = new DOMParser().parseFromString(t, 'application/xml');
    if (!r.ok || xmlText(d, 'Code')) throw new S3Error(r.status, xmlText(d, 'Code') || r.status, xmlText(d, 'Message') || t);
    localStorage.removeItem(rkey);
    done(`done (${parts} parts${resumed ? `, ${resumed} already there` : ''})`);
  } catch (e) {
    if (e.status >= 400 && e.status < 500 && e.code !== 'NotLoggedIn') {
      // Refused by S3: nothing to resume.
      done('failed');
      localStorage.removeItem(rkey);
      await call('DELETE', s3path(bucket, key, qs({ uploadId }))).catch(() => {});
    } else {
      done('interrupted: choose the same file again to resume');
    }
    throw e;
  } finally {
    S.uploading--;
  }
}

// ---------- share links ----------
function share(bucket, key, versionId) {
  const out = el('input', { class: 'url', id: 'share-url', readonly: true, placeholder: 'the link appears here' });
  const exp = el('select', { id: 'share-expiry' },
    [[3600, '1 hour'], [86400, '1 day'], [604800, '7 days (longest)'], [900, '15 minutes']].map(([s, t]) => el('option', { value: s }, t)));
  const note = el('p', { class: 'hint', id: 'share-note' });
  const dlg = el('div', { class: 'dialog', id: 'share-dialog' }, el('div', {},
    el('h2', {}, `Share ${key}`),
    el('p', {}, 'Anyone with the link can download this object until it expires (signed with your key; it stops working if your key is removed).'),
    el('div', { class: 'toolbar' }, 'Valid for ', exp,
      el('button', { type: 'button', id: 'share-create', onclick: guard(async () => {
        const j = await apiJSON('POST', '/api/presign', { bucket, key, versionId, expires: Number(exp.value) });
        out.value = j.url; note.textContent = `expires ${when(j.expires)}`; out.select();
      }) }, 'Create link')),
    out, note,
    el('div', { class: 'toolbar' },
      el('button', { type: 'button', class: 'secondary', onclick: () => { out.select(); navigator.clipboard && navigator.clipboard.writeText(out.value); } }, 'Copy'),
      el('button', { type: 'button', class: 'secondary', id: 'share-close', onclick: () => dlg.remove() }, 'Close'))));
  document.body.append(dlg);
}

// ---------- versions ----------
async function versions(bucket, key) {
  const { doc } = await s3('GET', bucket, '', qs({ versions: '', prefix: key, 'max-keys': '1000' }));
  const rows = [];
  for (const v of kids(doc, 'Version').concat(kids(doc, 'DeleteMarker'))) {
    if (xmlText(doc, 'Key', v) !== key) continue;
    const vid = xmlText(doc, 'VersionId', v);
    const marker = v.tagName === 'DeleteMarker';
    rows.push({ t: xmlText(doc, 'LastModified', v), tr: el('tr', { 'data-version': vid },
      el('td', {}, el('code', {}, vid), xmlText(doc, 'IsLatest', v) === 'true' ? el('span', { class: 'badge' }, ' latest') : null),
      el('td', {}, marker ? 'delete marker' : human(Number(xmlText(doc, 'Size', v)))),
      el('td', {}, when(xmlText(doc, 'LastModified', v))),
      el('td', { class: 'actions' },
        marker ? null : el('a', { href: s3path(bucket, key, qs({ versionId: vid })), download: key.split('/').pop() }, 'download'),
        marker ? null : el('button', { class: 'secondary', type: 'button', onclick: () => share(bucket, key, vid) }, 'share'),
        el('button', { class: 'danger', type: 'button', onclick: guard(async () => {
          if (!confirm(`Delete version ${vid} of ${key} for good?`)) return;
          await s3('DELETE', bucket, key, qs({ versionId: vid })); versions(bucket, key);
        }) }, 'delete version'))) });
  }
  rows.sort((a, b) => (a.t < b.t ? 1 : -1));
  const parent = key.includes('/') ? key.slice(0, key.lastIndexOf('/') + 1) : '';
  $('main').replaceChildren(
    el('div', { class: 'crumbs' }, el('a', { href: '#/' }, 'Buckets'), ' / ', el('a', { href: linkB(bucket, parent) }, bucket + '/' + parent)),
    el('h1', {}, `Versions of ${key}`),
    el('table', { id: 'versions' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Version'), el('th', {}, 'Size'), el('th', {}, 'Modified'), el('th', {}))),
      el('tbody', {}, rows.length ? rows.map((r) => r.tr) : el('tr', {}, el('td', { colspan: 4, class: 'hint' }, 'No versions (is versioning on for this bucket?)')))));
}

// ---------- bucket settings ----------
const CORS_TEMPLATE = `<CORSConfiguration>
  <CORSRule>
    <AllowedOrigin>https://example.org</AllowedOrigin>
    <AllowedMethod>GET</AllowedMethod>
    <AllowedHeader>*</AllowedHeader>
    <MaxAgeSeconds>3000</MaxAgeSeconds>
  </CORSRule>
</CORSConfiguration>`;
const LIFECYCLE_TEMPLATE = `<LifecycleConfiguration>
  <Rule>
    <ID>purge-scratch</ID>
    <Filter><Prefix>tmp/</Prefix></Filter>
    <Status>Enabled</Status>
    <Expiration><Days>30</Days></Expiration>
    <AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload>
  </Rule>
</LifecycleConfiguration>`;
function policyTemplate(bucket) {
  return JSON.stringify({ Version: '2012-10-17', Statement: [{ Sid: 'PublicRead', Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${bucket}/*` }] }, null, 2);
}
async function getDoc(bucket, sub, missing) {
  const { r, text } = await s3('GET', bucket, '', sub, { allow: [404] });
  if (r.status === 404) {
    const d = new DOMParser().parseFromString(text || '', 'application/xml');
    if (missing.includes(xmlText(d, 'Code'))) return '';
    throw new S3Error(404, xmlText(d, 'Code'), xmlText(d, 'Message'));
  }
  return text;
}
function editor(id, title, help, value, onSave, onDelete, template) {
  const ta = el('textarea', { id: id + '-text', spellcheck: 'false' });
  ta.value = value;
  const status = el('p', { id: id + '-status', class: 'error', hidden: true });
  const show = (ok, t) => { status.textContent = t; status.className = ok ? 'ok' : 'error'; status.hidden = false; };
  return el('div', { class: 'card', id }, el('h2', {}, title), el('p', { class: 'hint' }, help), ta,
    el('div', { class: 'toolbar' },
      el('button', { type: 'button', id: id + '-save', onclick: async () => {
        try { await onSave(ta.value); show(true, 'Saved.'); } catch (e) { show(false, e.message); }
      } }, 'Save'),
      el('button', { type: 'button', class: 'secondary', id: id + '-delete', onclick: async () => {
        try { await onDelete(); ta.value = ''; show(true, 'Removed.'); } catch (e) { show(false, e.message); }
      } }, 'Remove'),
      template ? el('button', { type: 'button', class: 'secondary', onclick: () => { ta.value = template; } }, 'Example') : null),
    status);
}
async function settings(bucket) {
  const [ver, policy, pab, cors, life] = await Promise.all([
    s3('GET', bucket, '', 'versioning').then((x) => xmlText(x.doc, 'Status') || 'Off (never enabled)'),
    getDoc(bucket, 'policy', ['NoSuchBucketPolicy']),
    getDoc(bucket, 'publicAccessBlock', ['NoSuchPublicAccessBlockConfiguration']),
    getDoc(bucket, 'cors', ['NoSuchCORSConfiguration']),
    getDoc(bucket, 'lifecycle', ['NoSuchLifecycleConfiguration']),
  ]);
  let pretty = policy;
  try { if (policy) pretty = JSON.stringify(JSON.parse(policy), null, 2); } catch (_) { /* keep as stored */ }
  const verStatus = el('b', { id: 'versioning-status' }, ver);
  const setVer = (s) => guard(async () => {
    await s3('PUT', bucket, '', 'versioning', { xml: `<VersioningConfiguration><Status>${s}</Status></VersioningConfiguration>` });
    verStatus.textContent = s; say(`Versioning ${s.toLowerCase()}`, true);
  });
  const pabDoc = pab ? new DOMParser().parseFromString(pab, 'application/xml') : null;
  const FLAGS = ['BlockPublicAcls', 'IgnorePublicAcls', 'BlockPublicPolicy', 'RestrictPublicBuckets'];
  const boxes = FLAGS.map((f) => el('input', { type: 'checkbox', id: 'pab-' + f, checked: pabDoc && xmlText(pabDoc, f) === 'true' }));
  $('main').replaceChildren(
    el('div', { class: 'crumbs' }, el('a', { href: '#/' }, 'Buckets'), ' / ', el('a', { href: linkB(bucket, '') }, bucket)),
    el('h1', {}, `Settings of ${bucket}`),
    el('div', { class: 'card', id: 'versioning' }, el('h2', {}, 'Versioning'),
      el('p', {}, 'Status: ', verStatus),
      el('div', { class: 'toolbar' },
        el('button', { type: 'button', id: 'versioning-enable', onclick: setVer('Enabled') }, 'Enable'),
        el('button', { type: 'button', class: 'secondary', id: 'versioning-suspend', onclick: setVer('Suspended') }, 'Suspend'))),
    editor('policy', 'Bucket policy', 'A JSON policy document (checked by the gateway as AWS checks it).', pretty,
      async (t) => {
        try { JSON.parse(t); } catch (e) { throw new Error(`Not JSON: ${e.message}`); }
        await s3('PUT', bucket, '', 'policy', { body: t, headers: { 'content-type': 'application/json', 'x-amz-checksum-crc32': crc32b64(new TextEncoder().encode(t)) } });
      },
      () => s3('DELETE', bucket, '', 'policy'), policyTemplate(bucket)),
    el('div', { class: 'card', id: 'pab' }, el('h2', {}, 'Public access block'),
      el('div', { class: 'checks' }, FLAGS.map((f, i) => el('label', {}, boxes[i], ' ' + f))),
      el('div', { class: 'toolbar' },
        el('button', { type: 'button', id: 'pab-save', onclick: guard(async () => {
          const xml = '<PublicAccessBlockConfiguration>' + FLAGS.map((f, i) => `<${f}>${boxes[i].checked}</${f}>`).join('') + '</PublicAccessBlockConfiguration>';
          await s3('PUT', bucket, '', 'publicAccessBlock', { xml }); say('Public access block saved', true);
        }) }, 'Save'),
        el('button', { type: 'button', class: 'secondary', onclick: guard(async () => {
          await s3('DELETE', bucket, '', 'publicAccessBlock'); boxes.forEach((b) => { b.checked = false; }); say('Public access block removed', true);
        }) }, 'Remove'))),
    editor('cors', 'CORS', 'The CORSConfiguration XML document.', cors,
      (t) => s3('PUT', bucket, '', 'cors', { xml: t }), () => s3('DELETE', bucket, '', 'cors'), CORS_TEMPLATE),
    editor('lifecycle', 'Lifecycle', 'The LifecycleConfiguration XML document (expiry runs as a scratch purge policy).', life,
      (t) => s3('PUT', bucket, '', 'lifecycle', { xml: t }), () => s3('DELETE', bucket, '', 'lifecycle'), LIFECYCLE_TEMPLATE));
}

// ---------- administrators ----------
function parseProm(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}
async function adminPage() {
  const h = await apiJSON('GET', '/api/admin/health');
  const r = await call('GET', '/api/admin/metrics');
  if (!r.ok) await fail(r);
  const text = await r.text();
  const ms = parseProm(text);
  const sum = (name, f) => ms.filter((m) => m.name === name && (!f || f(m.labels))).reduce((a, m) => a + m.value, 0);
  const reqs = sum('s3hpc_http_requests_total', (l) => l.operation !== 'Console');
  const errs4 = sum('s3hpc_http_requests_total', (l) => l.status && l.status[0] === '4');
  const errs5 = sum('s3hpc_http_requests_total', (l) => l.status && l.status[0] === '5');
  const byOp = {};
  for (const m of ms.filter((x) => x.name === 's3hpc_http_requests_total')) byOp[m.labels.operation] = (byOp[m.labels.operation] || 0) + m.value;
  const codes = ms.filter((x) => x.name === 's3hpc_http_errors_total').sort((a, b) => b.value - a.value).slice(0, 10);
  const stat = (label, v) => el('div', {}, el('b', {}, v), label);
  $('main').replaceChildren(
    el('h1', {}, 'Gateway'),
    el('div', { class: 'stats', id: 'health' },
      stat('health', h.ready ? 'ready' : `not ready: ${h.why}`),
      stat('version', h.version),
      stat('S3 requests', String(reqs)),
      stat('4xx / 5xx answers', `${errs4} / ${errs5}`),
      stat('in flight', String(sum('s3hpc_http_requests_in_flight'))),
      stat('open connections', String(sum('s3hpc_http_open_connections'))),
      stat('received', human(sum('s3hpc_http_received_bytes_total'))),
      stat('sent', human(sum('s3hpc_http_sent_bytes_total'))),
      stat('multipart uploads in progress', String(sum('s3hpc_multipart_uploads_in_progress')))),
    el('h2', {}, 'Requests by operation'),
    el('table', { id: 'ops' }, el('tbody', {}, Object.entries(byOp).sort((a, b) => b[1] - a[1]).slice(0, 15)
      .map(([op, n]) => el('tr', {}, el('td', {}, op), el('td', { class: 'num' }, String(n)))))),
    el('h2', {}, 'Error codes'),
    codes.length ? el('table', {}, el('tbody', {}, codes.map((c) => el('tr', {}, el('td', {}, c.labels.code), el('td', { class: 'num' }, String(c.value))))))
      : el('p', { class: 'hint' }, 'None.'),
    el('details', {}, el('summary', {}, 'All metrics (Prometheus text, as /metrics on the admin listener)'), el('pre', {}, text)));
}

// ---------- my keys ----------
const KEY_LIFETIMES = [[86400, '1 day'], [604800, '7 days'], [2592000, '30 days'], [7776000, '90 days'], [31536000, '1 year']];
async function keyRows(body) {
  const j = await apiJSON('GET', '/api/keys');
  body.replaceChildren(...(j.keys.length ? j.keys.map((k) => el('tr', {},
    el('td', { class: 'mono' }, k.accessKey), el('td', {}, k.description), el('td', {}, when(k.created)), el('td', {}, when(k.expires)),
    el('td', { class: 'actions' }, el('button', { type: 'button', class: 'danger', 'data-key': k.accessKey, onclick: guard(async () => {
      if (!confirm(`Revoke ${k.accessKey}? Every gateway refuses it within a second.`)) return;
      await apiJSON('DELETE', '/api/keys/' + encodeURIComponent(k.accessKey));
      say(`revoked ${k.accessKey}`, true);
      await keyRows(body);
    }) }, 'Revoke'))))
    : [el('tr', {}, el('td', { colspan: 5, class: 'hint' }, 'No keys yet.'))]));
}
async function keysPage() {
  const exp = el('select', { id: 'key-expiry' }, KEY_LIFETIMES.map(([v, t]) => el('option', { value: v }, t)));
  exp.value = '2592000';
  const desc = el('input', { id: 'key-description', placeholder: 'what it is for (shown in the list)', maxlength: 256, size: 36 });
  const fresh = el('div', { id: 'key-new' });
  const body = el('tbody', { id: 'keys-body' });
  $('main').replaceChildren(
    el('h1', {}, 'My keys'),
    el('p', { class: 'hint' }, 'S3 access keys of your POSIX user, as `s3hpc credentials` makes them on a login node: they act as you on every gateway of this root. A secret is shown once, when the key is made.'),
    el('div', { class: 'toolbar' }, 'Valid for ', exp, desc,
      el('button', { type: 'button', id: 'key-create', onclick: guard(async () => {
        const k = await apiJSON('POST', '/api/keys', { expiresSeconds: Number(exp.value), description: desc.value });
        fresh.replaceChildren(el('div', { class: 'card' },
          el('p', {}, el('b', {}, 'Your new key. '), 'Copy the secret now: it is not shown again.'),
          el('pre', { id: 'key-secret' }, `AccessKeyId: ${k.accessKey}\nSecretAccessKey: ${k.secretKey}\nExpiration: ${k.expires}`),
          el('button', { type: 'button', class: 'secondary', onclick: () => fresh.replaceChildren() }, 'Done')));
        desc.value = '';
        await keyRows(body);
      }) }, 'Create key')),
    fresh,
    el('table', { id: 'keys' }, el('thead', {}, el('tr', {}, ['Access key', 'Description', 'Created', 'Expires', ''].map((h) => el('th', {}, h)))), body));
  await keyRows(body);
}

// ---------- administrators: accounts, usage, bench reports ----------
async function accountsPage() {
  const j = await apiJSON('GET', '/api/admin/accounts');
  const yes = (b) => (b ? 'yes' : '');
  $('main').replaceChildren(
    el('h1', {}, 'Accounts'),
    el('p', { class: 'hint' }, 'The users file (`s3hpc user`, or the admin API remotely) and the accounts given on the command line.'),
    el('table', { id: 'accounts' },
      el('thead', {}, el('tr', {}, ['Access key', 'Name', 'Canonical id', 'POSIX user', 'uid', 'Admin', 'State', 'Source'].map((h) => el('th', {}, h)))),
      el('tbody', {}, j.accounts.map((a) => el('tr', {},
        el('td', {}, a.accessKey), el('td', {}, a.name || ''), el('td', {}, a.id || ''), el('td', {}, a.user || ''),
        el('td', { class: 'num' }, a.uid === null || a.uid === undefined ? '' : String(a.uid)), el('td', {}, yes(a.admin)),
        el('td', {}, a.disabled ? 'disabled' : 'enabled'), el('td', {}, a.source))))),
    el('h2', {}, 'Self-service keys'),
    j.keys.length ? el('table', { id: 'account-keys' },
      el('thead', {}, el('tr', {}, ['Access key', 'POSIX user', 'uid', 'Description', 'Created', 'Expires', 'State'].map((h) => el('th', {}, h)))),
      el('tbody', {}, j.keys.map((k) => el('tr', {},
        el('td', {}, k.accessKey), el('td', {}, k.user), el('td', { class: 'num' }, String(k.uid)), el('td', {}, k.description),
        el('td', {}, when(k.created)), el('td', {}, when(k.expires)),
        el('td', {}, k.disabled ? 'disabled' : (k.expired ? 'expired' : 'enabled')))))) : el('p', { class: 'hint' }, 'None.'));
}
async function usagePage() {
  const u = await apiJSON('GET', '/api/admin/usage');
  if (!u.computedAt) {
    $('main').replaceChildren(el('h1', {}, 'Usage'), el('p', { id: 'usage-pending' }, 'The first count over the buckets has not finished yet; try again in a moment.'));
    return;
  }
  const row = (cells) => el('tr', {}, cells.map(([v, c]) => el('td', c ? { class: c } : {}, v)));
  $('main').replaceChildren(
    el('h1', {}, 'Usage'),
    el('p', { class: 'hint', id: 'usage-age' }, `Counted at ${when(u.computedAt)} (${u.ageSeconds} s ago, in ${u.walkMilliseconds} ms) by the gateway's background walk over every bucket; current objects only.`),
    el('h2', {}, 'Per account'),
    el('table', { id: 'usage-accounts' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Account'), el('th', {}, 'Name'), el('th', { class: 'num' }, 'Buckets'), el('th', { class: 'num' }, 'Objects'), el('th', { class: 'num' }, 'Size'))),
      el('tbody', {}, u.accounts.map((a) => row([[a.id || '(no owner)'], [a.name || ''], [String(a.buckets), 'num'], [String(a.objects), 'num'], [human(a.bytes), 'num']])))),
    el('h2', {}, 'Per bucket'),
    el('table', { id: 'usage-buckets' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Bucket'), el('th', {}, 'Owner'), el('th', { class: 'num' }, 'Objects'), el('th', { class: 'num' }, 'Size'), el('th', {}, ''))),
      el('tbody', {}, u.buckets.map((b) => row([[b.name], [b.owner || ''], [String(b.objects), 'num'], [human(b.bytes), 'num'], [b.complete ? '' : `partial: ${b.error}`]])))));
}
// A bench report (`s3hpc bench --report DIR` uploaded under a prefix) rebuilt in this page from
// its index.html: headings, paragraphs and tables as text, its SVG plots as data: images (an
// <img> runs no script). Nothing of the report's own markup, scripts or styles is kept.
async function openReport(bucket, prefix, box) {
  const { text } = await s3('GET', bucket, prefix + 'index.html');
  const doc = new DOMParser().parseFromString(text, 'text/html');
  const KEEP = new Set(['H1', 'H2', 'H3', 'P', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'CODE', 'PRE', 'UL', 'LI', 'DIV', 'SECTION']);
  const images = [];
  const copy = (n) => {
    if (n.nodeType === Node.TEXT_NODE) return document.createTextNode(n.textContent);
    if (n.nodeType !== Node.ELEMENT_NODE) return null;
    if (n.tagName === 'IMG') {
      const src = n.getAttribute('src') || '';
      if (!/^[\w.-]+\.svg$/.test(src)) return null;
      const img = el('img', { alt: n.getAttribute('alt') || src, class: 'plot' });
      images.push([img, src]);
      return img;
    }
    if (!KEEP.has(n.tagName)) return null;
    const e = document.createElement(n.tagName.toLowerCase());
    for (const c of n.childNodes) { const k = copy(c); if (k) e.append(k); }
    return e;
  };
  const out = el('div', { class: 'card report', id: 'report' });
  for (const c of doc.body.childNodes) { const k = copy(c); if (k) out.append(k); }
  box.replaceChildren(out);
  for (const [img, src] of images) {
    const { text: svg } = await s3('GET', bucket, prefix + src);
    img.src = 'data:image/svg+xml;base64,' + btoa(unescape(encodeURIComponent(svg)));
  }
}
async function reportsPage() {
  const bucket = el('input', { id: 'reports-bucket', value: localStorage.getItem('s3hpc.reports.bucket') || 'bench-reports', size: 24 });
  const list = el('div', { id: 'reports-list' });
  const shown = el('div', { id: 'report-box' });
  const load = guard(async () => {
    localStorage.setItem('s3hpc.reports.bucket', bucket.value);
    shown.replaceChildren();
    const found = [];
    let token = null;
    do {
      const { doc } = await s3('GET', bucket.value, '', qs({ 'list-type': '2', 'max-keys': '1000', 'continuation-token': token || undefined }));
      for (const c of kids(doc, 'Contents')) {
        const k = xmlText(doc, 'Key', c);
        if (k === 'index.html' || k.endsWith('/index.html')) found.push([k.slice(0, -'index.html'.length), xmlText(doc, 'LastModified', c)]);
      }
      token = xmlText(doc, 'IsTruncated') === 'true' ? xmlText(doc, 'NextContinuationToken') : null;
    } while (token && found.length < 10000);
    found.sort((a, b) => (a[1] < b[1] ? 1 : -1));
    list.replaceChildren(found.length ? el('table', { id: 'reports' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Report'), el('th', {}, 'Uploaded'), el('th', {}, ''))),
      el('tbody', {}, found.map(([p, t]) => el('tr', {}, el('td', {}, p || '(bucket root)'), el('td', {}, when(t)),
        el('td', { class: 'actions' }, el('button', { type: 'button', 'data-report': p, onclick: guard(() => openReport(bucket.value, p, shown)) }, 'Open'))))))
      : el('p', { class: 'hint' }, 'No reports (no index.html) in this bucket.'));
  });
  $('main').replaceChildren(
    el('h1', {}, 'Bench reports'),
    el('p', { class: 'hint' }, 'Reports of `s3hpc bench --report DIR`, uploaded with their SVG plots under a prefix of a bucket (e.g. `aws s3 cp --recursive DIR s3://bench-reports/2026-11-28-nvme/`).'),
    el('div', { class: 'toolbar' }, 'Bucket ', bucket, el('button', { type: 'button', id: 'reports-load', onclick: load }, 'List')),
    list, shown);
  await load();
}

document.addEventListener('DOMContentLoaded', boot);
