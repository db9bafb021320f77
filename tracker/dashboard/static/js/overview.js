// The overview: counts by status, throughput over the last minutes, the
// workers' slots, and the jobs in progress. It draws each overview event
// as it comes, without asking riotd for anything more.
(function () {
  'use strict';
  const {h, fill, api, fmt, stat, table, link, jobBar} = window.riot;

  riot.page('overview', (view) => {
    const counts = h('div', {class: 'stats', id: 'counts'});
    const slots = h('div', {class: 'stats'});
    const chartBox = h('div', {class: 'chart', id: 'throughput'});
    const jobs = h('div', {id: 'jobs-in-progress'});
    const about = h('p', {class: 'about'});
    fill(view,
      h('h1', null, 'Overview'), about, counts,
      h('h2', null, 'Throughput'), chartBox,
      h('h2', null, 'Workers'), slots,
      h('h2', null, 'Jobs in progress'), jobs);

    let chart = null;
    function drawChart(samples) {
      const xs = [], done = [], failed = [];
      for (const s of samples || []) {
        xs.push(new Date(s.t).getTime() / 1000);
        done.push(s.done / 5);
        failed.push(s.failed / 5);
      }
      const data = [xs, done, failed];
      const width = Math.max(300, chartBox.clientWidth || 600);
      if (!window.uPlot) {
        fill(chartBox, h('p', {class: 'empty'}, 'The chart library did not load.'));
        return;
      }
      if (chart) {
        chart.setData(data);
        return;
      }
      chart = new uPlot({
        width, height: 220,
        // The last minutes: at least two, at most the ten riotd keeps.
        scales: {
          x: {time: true, range: (u, min, max) => [Math.min(min, max - 120), max]},
          y: {range: (u, min, max) => [0, Math.max(1, max * 1.1)]},
        },
        legend: {live: false},
        series: [
          {},
          {label: 'done/s', stroke: '#2e7d32', fill: 'rgba(46,125,50,0.12)', width: 2, value: (u, v) => (v == null ? '–' : v.toFixed(1))},
          {label: 'failed/s', stroke: '#c62828', width: 2, value: (u, v) => (v == null ? '–' : v.toFixed(1))},
        ],
        axes: [{}, {label: 'per second', size: 60}],
      }, data, chartBox);
    }
    const onResize = () => chart && chart.setSize({width: Math.max(300, chartBox.clientWidth), height: 220});
    window.addEventListener('resize', onResize);

    function draw(ov) {
      riot.knowJobs(ov.jobs);
      const w = ov.workunits || {};
      about.textContent = (ov.tracker || 'riotd') + ' · up ' + fmt.dur(ov.uptime_seconds) + ' · ' +
        (ov.durable ? 'durable' : 'memory only') + ' · protocol ' + ov.protocol_version;
      fill(counts,
        stat('waiting', fmt.num(w.waiting), 'count-waiting', 's-waiting'),
        stat('running', fmt.num(w.running), 'count-running', 's-running'),
        stat('done', fmt.num(w.done), 'count-done', 's-done'),
        stat('error', fmt.num(w.error), 'count-error', 's-error'),
        stat('finished', fmt.rate(ov.finished_per_second), 'rate'));
      const wk = ov.workers || {};
      fill(slots,
        stat('workers', h('a', {href: '#/workers'}, fmt.num(wk.count)), 'count-workers'),
        stat('slots in use', fmt.num(wk.running) + ' of ' + fmt.num(wk.slots), 'slots-in-use'),
        stat('prefetched', fmt.num(wk.prefetched), 'prefetched'));
      drawChart(ov.throughput);
      fill(jobs, table([
        ['job', (j) => link.job(j.id, j.name)],
        ['master', (j) => j.master || '–'],
        ['progress', (j) => jobBar(j), 'wide'],
        ['done', (j) => fmt.num(j.done), 'n'],
        ['failed', (j) => fmt.num(j.failed), 'n'],
        ['rate', (j) => fmt.rate(j.finished_per_second), 'n'],
        ['ETA', (j) => (j.eta_seconds === undefined ? '–' : fmt.dur(j.eta_seconds)), 'n'],
      ], ov.jobs, 'No job in progress.'));
    }

    return {
      refresh: async () => draw(await api('/api/v1/overview')),
      overview: draw,
      unmount() {
        window.removeEventListener('resize', onResize);
        if (chart) chart.destroy();
      },
    };
  });
})();
