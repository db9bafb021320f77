// Workers: each connected worker's slots, what it holds, its memory and
// what it has done.
(function () {
  'use strict';
  const {h, fill, api, fmt, table, link} = window.riot;

  riot.page('workers', (view) => {
    const list = h('div', {id: 'workers'});
    fill(view, h('h1', null, 'Workers'), list);

    const memory = (w) => {
      if (w.memory_in_use === undefined && w.memory_limit === undefined) return '–';
      const used = fmt.bytes(w.memory_in_use);
      if (!w.memory_limit) return used;
      const pct = w.memory_in_use !== undefined ? ' (' + Math.round((100 * w.memory_in_use) / w.memory_limit) + '%)' : '';
      return used + ' of ' + fmt.bytes(w.memory_limit) + pct;
    };
    const slots = (w) => {
      const meter = h('meter', {min: 0, max: w.slots || 1, value: Math.min(w.running || 0, w.slots || 0)});
      return h('span', {class: 'slots'}, meter, ' ', fmt.num(w.running) + ' of ' + fmt.num(w.slots) + ' running',
        w.prefetched ? ', ' + fmt.num(w.prefetched) + ' prefetched' : '');
    };

    return {
      async refresh() {
        const r = await api('/api/v1/workers');
        fill(list, table([
          ['name', (w) => link.worker(w.name)],
          ['address', (w) => w.remote || '–'],
          ['agent', (w) => w.agent || '–'],
          ['slots', slots],
          ['prefetch', (w) => fmt.num(w.prefetch), 'n'],
          ['GPUs', (w) => fmt.num(w.gpus), 'n'],
          ['memory', memory],
          ['connected', (w) => h('span', {title: w.since || null}, fmt.ago(w.since))],
          ['done', (w) => fmt.num(w.done), 'n'],
          ['failed', (w) => (w.failed ? h('a', {href: '#/workunits' + riot.query({worker: w.name, status: 'error'})}, fmt.num(w.failed)) : '0'), 'n'],
        ], r.workers, 'No worker is connected. Start one: riot-worker HOST:2355'));
      },
    };
  });
})();
