// Jobs: what each master runs, with its progress, rate and ETA; a job's
// page adds its failures, its workunits and a Cancel button.
(function () {
  'use strict';
  const {h, fill, api, fmt, when, stat, table, link, jobBar, cancelButton} = window.riot;

  const eta = (j) => (j.eta_seconds === undefined ? '–' : fmt.dur(j.eta_seconds));

  riot.page('jobs', (view) => {
    const list = h('div', {id: 'jobs'});
    fill(view, h('h1', null, 'Jobs'), list);
    return {
      async refresh() {
        const r = await api('/api/v1/jobs');
        riot.knowJobs(r.jobs);
        fill(list, table([
          ['job', (j) => link.job(j.id, j.name)],
          ['master', (j) => j.master || '–'],
          ['state', (j) => riot.badge(j.state)],
          ['started', (j) => when(j.started)],
          ['progress', jobBar, 'wide'],
          ['submitted', (j) => fmt.num(j.submitted || 0), 'n'],
          ['failed', (j) => fmt.num(j.failed || 0), 'n'],
          ['rate', (j) => fmt.rate(j.finished_per_second), 'n'],
          ['ETA', eta, 'n'],
        ], r.jobs, 'No job yet. Run one: riot-worker eval --tracker HOST:2355 job.js'));
      },
    };
  });

  // failureGroups lists failure groups (of /api/v1/failures or a job's).
  riot.failureGroups = (groups) =>
    table([
      ['error', (g) => h('span', {class: 'err'}, h('b', null, g.name || 'Error'), ': ', g.message || '')],
      ['count', (g) => fmt.num(g.count), 'n'],
      ['latest', (g) => h('span', {title: g.latest || null}, fmt.ago(g.latest))],
      ['job', (g) => link.job(g.job)],
      ['workunits', (g) => h('span', {class: 'keys'}, [...new Set(g.keys || [])].map((k) => [link.workunit(k), ' ']))],
    ], groups, 'No failures.');

  riot.page('job', (view, ctx) => {
    const id = ctx.id;
    const head = h('div', {class: 'head'});
    const bar = h('div', {id: 'job-progress'});
    const stats = h('div', {class: 'stats', id: 'job-stats'});
    const failures = h('div', {id: 'job-failures'});
    const units = h('div', {id: 'job-workunits'});
    const cancel = cancelButton('Cancel job', 'Cancel every waiting and running workunit of this job?',
      '/api/v1/jobs/' + encodeURIComponent(id) + '/cancel', () => riot.reload());
    cancel.id = 'job-cancel';
    fill(view, h('p', {class: 'crumbs'}, h('a', {href: '#/jobs'}, 'Jobs'), ' / '), head, bar, stats, cancel,
      h('h2', null, 'Failures'), failures, h('h2', null, 'Workunits'), units);
    const list = riot.workunitList(units, {job: id}, {hide: ['job']});

    return {
      async refresh() {
        const j = await api('/api/v1/jobs/' + encodeURIComponent(id));
        if (!ctx.alive()) return;
        riot.knowJobs([j]);
        fill(head, h('h1', null, 'Job ', h('span', {id: 'job-name'}, j.name || j.id), ' ', riot.badge(j.state)),
          h('p', {class: 'about'}, 'id ', h('code', null, j.id), ' · master ', j.master || '–', ' · started ', when(j.started),
            j.ended ? [' · ended ', when(j.ended)] : ''));
        fill(bar, jobBar(j));
        fill(stats,
          stat('submitted', fmt.num(j.submitted || 0)),
          stat('from memory', fmt.num(j.from_memory || 0)),
          stat('waiting', fmt.num(j.waiting || 0), 'job-waiting', 's-waiting'),
          stat('running', fmt.num(j.running || 0), 'job-running', 's-running'),
          stat('done', fmt.num(j.done || 0), 'job-done', 's-done'),
          stat('failed', fmt.num(j.failed || 0), 'job-failed', 's-error'),
          stat('canceled', fmt.num(j.canceled || 0), 'job-canceled', 's-canceled'),
          stat('rate', fmt.rate(j.finished_per_second)),
          stat('ETA', eta(j)));
        cancel.querySelector('button').disabled = !(j.waiting || j.running);
        fill(failures, riot.failureGroups(j.failures));
        await list.refresh();
      },
    };
  });
})();
