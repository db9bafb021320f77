// Workunits: the list, filtered and paged on the server, and one
// workunit's page with its source, values, error, console and times.
(function () {
  'use strict';
  const {h, fill, api, query, fmt, when, table, link, badge, cancelButton} = window.riot;

  const STATUSES = ['waiting', 'running', 'done', 'error'];
  const PAGE = 50;

  // workunitList shows /api/v1/workunits with the filters of params()
  // (an object, or a function that returns one) in el, a page at a time;
  // opts.hide names columns to leave out (a job's page has no job column).
  // riotd pages by cursor: the list keeps the cursors of the pages before
  // this one for Previous. A partial page (riotd stopped scanning early)
  // says so, and Next goes on from where it stopped.
  riot.workunitList = (el, params, opts) => {
    const hide = new Set((opts && opts.hide) || []);
    const rows = h('div', {class: 'rows'});
    const prev = h('button', {type: 'button', id: 'page-prev', onclick: () => go(back.pop() || '', false)}, '← Previous');
    const next = h('button', {type: 'button', id: 'page-next', onclick: () => go(nextCursor, true)}, 'Next →');
    const note = h('span', {class: 'note', id: 'page-note'});
    fill(el, rows, h('div', {class: 'pager'}, prev, ' ', next, ' ', note));
    let cursor = '';
    let nextCursor = '';
    const back = [];

    async function go(c, forward) {
      if (forward) back.push(cursor);
      cursor = c;
      await refresh();
    }

    async function refresh() {
      const p = Object.assign({}, typeof params === 'function' ? params() : params, {cursor, limit: PAGE});
      const r = await api('/api/v1/workunits' + query(p));
      const list = r.workunits || [];
      nextCursor = r.next || '';
      const cols = [
        ['key', (w) => link.workunit(w.key, w.short)],
        ['status', (w) => badge(w.status)],
        ['job', (w) => link.job(w.job)],
        ['worker', (w) => link.worker(w.worker)],
        ['changed', (w) => when(w.changed)],
        ['attempts', (w) => fmt.num(w.attempts), 'n'],
        ['error', (w) => (w.error ? h('span', {class: 'err'}, h('b', null, w.error.name || 'Error'), ': ', w.error.message || '') : ''), 'wide'],
      ].filter((c) => !hide.has(c[0]));
      fill(rows, table(cols, list, r.partial ? 'None in this stretch of the table: go on with Next.' : 'No workunits match.'));
      prev.disabled = back.length === 0 && cursor === '';
      next.disabled = !nextCursor;
      note.textContent = (r.partial ? 'riotd stopped scanning early: there may be more after this page. ' : '') +
        (back.length ? 'Page ' + (back.length + 1) + '.' : '');
    }
    return {refresh};
  };

  riot.page('workunits', (view, ctx) => {
    const q = ctx.query;
    const chosen = new Set((q.get('status') || '').split(',').filter(Boolean));
    const boxes = STATUSES.map((s) => h('label', {class: 'check'},
      h('input', {type: 'checkbox', name: 'status', value: s, checked: chosen.has(s)}), ' ', badge(s)));
    const input = (name, label, hint) => h('label', null, label + ' ',
      h('input', {type: 'search', name, value: q.get(name) || '', placeholder: hint, id: 'filter-' + name, list: 'choices-' + name}));
    // The jobs and workers to choose from, as the inputs' suggestions.
    const jobChoices = h('datalist', {id: 'choices-job'});
    const workerChoices = h('datalist', {id: 'choices-worker'});
    const form = h('form', {class: 'filters', id: 'filters'},
      h('span', {class: 'statuses'}, boxes),
      input('job', 'job', 'job id'), input('worker', 'worker', 'name'), input('error', 'error', 'text in the error'),
      h('button', {type: 'submit'}, 'Filter'), ' ', h('a', {href: '#/workunits'}, 'clear'), jobChoices, workerChoices);
    api('/api/v1/jobs').then((r) => {
      riot.knowJobs(r.jobs);
      fill(jobChoices, (r.jobs || []).map((j) => h('option', {value: j.id, label: j.name + ' (' + j.state + ')'})));
    }).catch(() => {});
    api('/api/v1/workers').then((r) => fill(workerChoices, (r.workers || []).map((w) => h('option', {value: w.name})))).catch(() => {});
    const out = h('div', {id: 'workunits'});
    fill(view, h('h1', null, 'Workunits'), form, out);

    const params = () => ({
      status: [...chosen].join(','),
      job: q.get('job') || '', worker: q.get('worker') || '', error: q.get('error') || '',
    });
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const fd = new FormData(form);
      const p = {status: fd.getAll('status').join(','), job: fd.get('job').trim(), worker: fd.get('worker').trim(), error: fd.get('error').trim()};
      location.hash = '#/workunits' + query(p);
    });
    form.addEventListener('change', (ev) => {
      if (ev.target.name === 'status') form.requestSubmit();
    });
    return riot.workunitList(out, params);
  });

  // SOURCE_LINES is how much of a workunit's source its page shows.
  const SOURCE_LINES = 40;

  function source(src) {
    const lines = String(src).split('\n');
    const shown = lines.slice(0, SOURCE_LINES).join('\n');
    return [h('pre', {class: 'code', id: 'wu-source'}, shown),
      lines.length > SOURCE_LINES && h('p', {class: 'note'}, '… ' + fmt.num(lines.length - SOURCE_LINES) + ' more lines')];
  }

  const preview = (v, id) => v && [h('pre', {class: 'value', id: id || null}, v.preview === undefined ? '' : v.preview),
    (v.truncated || v.bytes !== undefined) && h('p', {class: 'note'},
      v.bytes !== undefined ? fmt.bytes(v.bytes) + ' encoded' : '', v.truncated ? ' · preview cut at 4 KiB' : '')];

  // dl makes a description list of [term, value] pairs, skipping those
  // whose value is undefined.
  const dl = (pairs) => h('dl', {class: 'facts'},
    pairs.filter((p) => p[1] !== undefined && p[1] !== null).map((p) => [h('dt', null, p[0]), h('dd', null, p[1])]));

  riot.page('workunit', (view, ctx) => {
    const key = ctx.id;
    const body = h('div');
    const cancel = cancelButton('Cancel workunit', 'Cancel this workunit? Its master sees it fail with a Canceled error.',
      '/api/v1/workunits/' + encodeURIComponent(key) + '/cancel', () => riot.reload());
    cancel.id = 'wu-cancel';
    fill(view, h('p', {class: 'crumbs'}, h('a', {href: '#/workunits'}, 'Workunits'), ' / '),
      h('h1', null, 'Workunit ', h('code', {class: 'key'}, key.slice(0, 12))), body);

    return {
      async refresh() {
        const w = await api('/api/v1/workunits/' + encodeURIComponent(key));
        if (!ctx.alive()) return;
        const o = w.options || {};
        const active = w.status === 'waiting' || w.status === 'running';
        cancel.hidden = !active;
        const e = w.error;
        fill(body,
          h('p', {class: 'status-line'}, badge(w.status), ' ', w.kind ? h('code', null, w.kind) : '', w.name ? ' ' + w.name : '', ' ', cancel),
          dl([
            ['key', h('code', {id: 'wu-key'}, w.key)],
            ['job', w.job ? link.job(w.job) : undefined],
            ['worker', w.worker ? h('span', {id: 'wu-worker'}, link.worker(w.worker)) : undefined],
            ['attempts', fmt.num(w.attempts)],
            ['workers lost', w.lost_from && w.lost_from.length ? w.lost_from.join(', ') : undefined],
            ['options', [o.no_cache ? 'no cache' : 'cached', o.gpus ? ', ' + o.gpus + ' GPUs' : '',
              o.timeout_seconds ? ', timeout ' + fmt.dur(o.timeout_seconds) : ''].join('')],
          ]),
          e && h('section', {class: 'error-box', id: 'wu-error'},
            h('h2', null, h('span', {id: 'wu-error-name'}, e.name || 'Error'), ': ', h('span', {id: 'wu-error-message'}, e.message || '')),
            h('p', {class: 'note'}, e.kind ? 'kind ' + e.kind : '', e.worker ? ' · on worker ' : '', e.worker ? h('b', {id: 'wu-error-worker'}, e.worker) : ''),
            e.stack && h('pre', {class: 'code', id: 'wu-stack'}, e.stack)),
          h('h2', null, 'Times'),
          dl([
            ['submitted', w.submitted ? when(w.submitted) : undefined],
            ['assigned', w.assigned ? when(w.assigned) : undefined],
            ['started', w.started ? when(w.started) : undefined],
            ['finished', w.finished ? when(w.finished) : undefined],
            ['queue wait', w.queue_seconds !== undefined ? fmt.dur(w.queue_seconds) : undefined],
            ['run time', w.run_seconds !== undefined ? fmt.dur(w.run_seconds) : undefined],
          ]),
          w.source !== undefined && [h('h2', null, 'Source'), source(w.source)],
          w.args && w.args.length > 0 && [h('h2', null, 'Arguments'),
            h('ol', {class: 'args'}, w.args.map((a, i) => h('li', null, preview(a, 'wu-arg-' + i))))],
          w.result && [h('h2', null, 'Result'), preview(w.result, 'wu-result')],
          w.console && w.console.length > 0 && [h('h2', null, 'Console'),
            h('pre', {class: 'console', id: 'wu-console'}, w.console.map((l) => h('span', {class: 'lvl-' + l.level}, '[' + l.level + '] ' + l.text + '\n')))],
          w.source === undefined && !w.result && !e && h('p', {class: 'note'},
            'riotd keeps the source, values and console of the recent workunits only.'));
      },
    };
  });
})();
