// riotd's dashboard: the helpers every page uses, the hash router and the
// live updates. Each page is a file that calls riot.page(NAME, mount).
//
// Every string from the API goes into the page as text (textContent, or a
// text node made by h): nothing the tracker says is parsed as HTML.
(function () {
  'use strict';

  const riot = (window.riot = {});
  const pages = {};

  // h makes an element: h('a', {href: '#/jobs', class: 'x'}, 'text', child).
  // Strings and numbers among the children become text nodes; null,
  // undefined and false are skipped; arrays are flattened. An attribute
  // named on* whose value is a function is an event listener.
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'href') el.setAttribute('href', safeHref(v));
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    append(el, kids);
    return el;
  }

  function append(el, kids) {
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      if (Array.isArray(k)) append(el, k);
      else if (k instanceof Node) el.appendChild(k);
      else el.appendChild(document.createTextNode(String(k)));
    }
  }

  // safeHref keeps the page's links on the page: hash routes and riotd's
  // own paths only.
  function safeHref(v) {
    v = String(v);
    return v.startsWith('#') || (v.startsWith('/') && !v.startsWith('//')) ? v : '#/';
  }

  // fill replaces an element's children.
  function fill(el, ...kids) {
    el.replaceChildren();
    append(el, kids);
    return el;
  }

  // ApiError is a failed API request: its status and what riotd said.
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // api GETs (or, with method, sends) an API path and returns its JSON.
  async function api(path, method) {
    let resp;
    try {
      resp = await fetch(path, {method: method || 'GET', credentials: 'same-origin', headers: {Accept: 'application/json'}});
    } catch (e) {
      throw new ApiError(0, 'riotd does not answer (' + e.message + ')');
    }
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      body = null;
    }
    if (!resp.ok) {
      if (resp.status === 401) sessionEnded();
      throw new ApiError(resp.status, (body && body.error) || resp.status + ' ' + resp.statusText);
    }
    return body;
  }

  // query builds a query string from an object, leaving out empty values.
  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    const s = q.toString();
    return s ? '?' + s : '';
  }

  const banner = () => document.getElementById('banner');

  function sessionEnded() {
    fill(banner(), 'Not logged in, or the session ended: ', h('a', {href: '/'}, 'log in again'), '.');
    banner().hidden = false;
  }

  // Formatting.
  const nf = new Intl.NumberFormat('en-US');
  const fmt = {
    num: (n) => (n === undefined || n === null ? '–' : nf.format(n)),
    rate: (r) => (r === undefined || r === null ? '–' : (r >= 100 ? nf.format(Math.round(r)) : r.toFixed(1)) + '/s'),
    // dur writes seconds as "850 ms", "12.3 s", "4 min 5 s", "2 h 3 min".
    dur(s) {
      if (s === undefined || s === null) return '–';
      if (s < 1) return Math.round(s * 1000) + ' ms';
      if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
      if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
      return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
    },
    bytes(b) {
      if (b === undefined || b === null) return '–';
      const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      while (b >= 1024 && i < u.length - 1) (b /= 1024), i++;
      return (i ? b.toFixed(1) : b) + ' ' + u[i];
    },
    // time writes an RFC 3339 time as the browser's local time of day.
    time(t) {
      if (!t) return '–';
      const d = new Date(t);
      return d.toLocaleTimeString(undefined, {hour12: false}) + '.' + String(d.getMilliseconds()).padStart(3, '0');
    },
    ago(t) {
      if (!t) return '–';
      const s = (Date.now() - new Date(t).getTime()) / 1000;
      return s < 1 ? 'just now' : fmt.dur(s) + ' ago';
    },
  };

  // A timestamp cell: the time of day, the full time as its tooltip.
  const when = (t) => h('time', {datetime: t || null, title: t || null}, fmt.time(t));

  // jobNames are the names of the jobs the page has seen (in the
  // overview's jobs and the jobs pages), for links that have only an id.
  const jobNames = new Map();
  const knowJobs = (jobs) => (jobs || []).forEach((j) => j.id && j.name && jobNames.set(j.id, j.name));

  // Links to the pages of one thing.
  const link = {
    job: (id, name) => (id ? h('a', {href: '#/jobs/' + encodeURIComponent(id), title: id}, name || jobNames.get(id) || id) : '–'),
    workunit: (key, short) => (key ? h('a', {href: '#/workunits/' + encodeURIComponent(key), class: 'key'}, short || key.slice(0, 12)) : '–'),
    worker: (name) => (name ? h('a', {href: '#/workunits' + query({worker: name})}, name) : '–'),
  };

  const badge = (status) => h('span', {class: 'badge s-' + String(status)}, String(status));

  // table makes a table: cols are [title, cell(row) -> node or text,
  // class?]; empty says what an empty table means.
  function table(cols, rows, empty) {
    if (!rows || rows.length === 0) return h('p', {class: 'empty'}, empty || 'Nothing here.');
    return h('table', {class: 'grid'},
      h('thead', null, h('tr', null, cols.map((c) => h('th', {class: c[2] || null}, c[0])))),
      h('tbody', null, rows.map((r) => h('tr', null, cols.map((c) => h('td', {class: c[2] || null}, c[1](r)))))));
  }

  // stat is one figure with its label, e.g. on the overview.
  const stat = (label, value, id, cls) =>
    h('div', {class: 'stat ' + (cls || '')}, h('div', {class: 'value', id: id || null}, value), h('div', {class: 'label'}, label));

  // jobBar draws a job's workunits as one bar: done, failed, canceled,
  // running, and what waits as the rest.
  function jobBar(j) {
    const parts = [['done', j.done], ['failed', j.failed], ['canceled', j.canceled], ['running', j.running]];
    const sum = (j.from_memory || 0) + (j.waiting || 0) + parts.reduce((a, p) => a + (p[1] || 0), 0);
    const total = Math.max(j.submitted || 0, sum) || 1;
    const finished = (j.from_memory || 0) + (j.done || 0) + (j.failed || 0) + (j.canceled || 0);
    const bar = h('div', {class: 'bar', title: fmt.num(finished) + ' of ' + fmt.num(total) + ' finished',
      role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': finished});
    const seg = (cls, n) => n > 0 && h('span', {class: 'seg ' + cls, 'data-n': n, title: cls + ' ' + fmt.num(n)});
    append(bar, [seg('done', (j.done || 0) + (j.from_memory || 0)), parts.slice(1).map((p) => seg(p[0], p[1] || 0))]);
    for (const s of bar.children) s.style.width = (100 * Number(s.dataset.n)) / total + '%';
    return h('div', {class: 'progress'}, bar, h('span', {class: 'pct'}, Math.floor((100 * finished) / total) + '%'));
  }

  // confirm asks a question in the page's dialog; true when confirmed.
  // The answer comes from the buttons' clicks (and Escape), not from the
  // dialog's close event, which the browser fires later, in a task of its
  // own. One question at a time: asking again answers the open one "no".
  let answer = null;
  function settle(yes) {
    const a = answer;
    answer = null;
    const dlg = document.getElementById('confirm');
    if (dlg.open) dlg.close();
    if (a) a(yes);
  }
  function confirm(text, yes) {
    settle(false);
    const dlg = document.getElementById('confirm');
    document.getElementById('confirm-text').textContent = text;
    document.getElementById('confirm-yes').textContent = yes || 'Cancel it';
    dlg.showModal();
    return new Promise((resolve) => (answer = resolve));
  }
  document.addEventListener('DOMContentLoaded', () => {
    const button = (id, yes) => document.getElementById(id).addEventListener('click', (ev) => {
      ev.preventDefault();
      settle(yes);
    });
    button('confirm-yes', true);
    button('confirm-no', false);
    document.getElementById('confirm').addEventListener('cancel', () => settle(false));
  });

  // cancelButton asks, then POSTs path, and says how many it canceled.
  function cancelButton(label, question, path, done) {
    const out = h('span', {class: 'note'});
    const btn = h('button', {class: 'danger', type: 'button', onclick: async () => {
      if (!(await confirm(question))) return;
      btn.disabled = true;
      try {
        const r = await api(path, 'POST');
        out.textContent = 'Canceled ' + fmt.num(r.canceled) + (r.canceled === 1 ? ' workunit.' : ' workunits.');
        if (done) done(r);
      } catch (e) {
        out.textContent = 'Not canceled: ' + e.message;
      } finally {
        btn.disabled = false;
      }
    }}, label);
    return h('span', {class: 'cancel'}, btn, ' ', out);
  }

  // Pages and the router. A route is #/NAME or #/NAME/ID, with a query
  // after '?'. mount(view, ctx) builds the page into view and returns
  // {refresh, overview, unmount}: refresh() loads its data (again, on
  // live updates); overview(doc), when present, takes each overview event
  // instead; unmount() undoes what mount did outside the view.
  function page(name, mount) {
    pages[name] = mount;
  }

  function parseRoute() {
    const raw = location.hash.replace(/^#\/?/, '');
    const [p, q] = raw.split('?');
    const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
    let name = parts[0] || 'overview';
    if (parts.length > 1 && (name === 'jobs' || name === 'workunits')) name = name.slice(0, -1);
    return {name, id: parts[1], query: new URLSearchParams(q || ''), nav: parts[0] || 'overview'};
  }

  let current = null; // {name, ctl, gen}
  let gen = 0;

  function route() {
    const r = parseRoute();
    const mount = pages[r.name];
    if (current && current.ctl.unmount) current.ctl.unmount();
    const main = document.getElementById('main');
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.route === r.nav);
    const navLink = document.querySelector('#nav a[data-route="' + r.nav + '"]');
    document.title = (navLink ? navLink.textContent + (r.id ? ' ' + r.id.slice(0, 12) : '') + ' · ' : '') + document.body.dataset.title;
    const view = h('div', {class: 'page page-' + r.name});
    fill(main, view);
    const my = ++gen;
    if (!mount) {
      fill(view, h('h1', null, 'No such page'), h('p', null, h('a', {href: '#/'}, 'Back to the overview')));
      current = null;
      return;
    }
    const ctx = {id: r.id, query: r.query, alive: () => my === gen};
    current = {name: r.name, ctl: mount(view, ctx) || {}, gen: my};
    if (riot.lastOverview && current.ctl.overview) current.ctl.overview(riot.lastOverview);
    reload();
  }

  // reload refreshes the current page, one request at a time: a reload
  // asked for while one runs happens once it ends.
  let loading = false;
  let again = false;
  async function reload() {
    if (!current || !current.ctl.refresh) return;
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    const c = current;
    try {
      await c.ctl.refresh();
      if (c === current && c.error) clearError(c);
    } catch (e) {
      if (c === current) showError(c, e);
    } finally {
      loading = false;
      if (again) {
        again = false;
        reload();
      }
    }
  }

  function showError(c, e) {
    const main = document.getElementById('main');
    if (!c.error) {
      c.error = h('p', {class: 'error load-error'});
      main.prepend(c.error);
    }
    c.error.textContent = 'Could not load this page: ' + e.message;
  }

  function clearError(c) {
    c.error.remove();
    c.error = null;
  }

  // Live updates: riotd pushes an overview event (at most once a
  // second) when something changed. The overview takes it as it is; other
  // pages reload their data, at most once a second, and not while the tab
  // is hidden (once it shows again).
  const RELOAD_EVERY = 1000;
  let lastReload = 0;
  let timer = null;
  let stale = false;
  function scheduleReload() {
    if (document.hidden) {
      stale = true;
      return;
    }
    if (timer) return;
    const wait = Math.max(0, lastReload + RELOAD_EVERY - Date.now());
    timer = setTimeout(() => {
      timer = null;
      lastReload = Date.now();
      reload();
    }, wait);
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && stale) {
      stale = false;
      scheduleReload();
    }
  });

  // The browser reconnects an event stream by itself, unless riotd
  // answered with an error (a 401 after the session ended, a 503 when too
  // many streams are open): then the page finds out why, and tries again
  // later, less often each time.
  let retry = 5000;
  function live() {
    const dot = document.getElementById('live');
    const es = new EventSource('/api/v1/events');
    es.addEventListener('open', () => {
      dot.className = 'live on';
      dot.textContent = 'live';
      retry = 5000;
    });
    es.addEventListener('error', () => {
      dot.className = 'live off';
      dot.textContent = es.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting';
      if (es.readyState !== EventSource.CLOSED) return;
      api('/api/v1/overview').catch(() => {});
      setTimeout(live, retry);
      retry = Math.min(2 * retry, 60000);
    });
    es.addEventListener('overview', (ev) => {
      let doc;
      try {
        doc = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      riot.lastOverview = doc;
      knowJobs(doc.jobs);
      if (!current) return;
      if (current.ctl.overview) current.ctl.overview(doc);
      if (current.ctl.refresh && !current.ctl.overview) scheduleReload();
    });
  }

  Object.assign(riot, {h, fill, append, api, query, fmt, when, link, knowJobs, badge, table, stat, jobBar, confirm, cancelButton, page, ApiError, reload});

  window.addEventListener('hashchange', route);
  document.addEventListener('DOMContentLoaded', () => {
    route();
    live();
  });
})();
