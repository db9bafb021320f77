// The task stream: recent workunits as bars in time, one lane per worker
// slot, as Dask draws it. A click on a bar opens its workunit.
(function () {
  'use strict';
  const {h, fill, api, query, fmt} = window.riot;

  const WINDOWS = [[30, '30 s'], [60, '1 min'], [300, '5 min'], [900, '15 min']];
  const COLORS = {done: '#43a047', error: '#e53935', running: '#1e88e5', canceled: '#9e9e9e'};
  const LANE = 14, GAP = 3, HEAD = 18, LABEL = 140, AXIS = 22;

  // lanes packs one worker's tasks (sorted by start) into lanes greedily:
  // each goes into the first lane free when it starts, else a new one. A
  // lane is free slack ms before its last task ends: a task's start is
  // its end less its run time, as the worker measured it, so the next one
  // on the same slot can seem to start a moment early.
  function lanes(tasks, slack) {
    const ends = [];
    for (const t of tasks) {
      let i = ends.findIndex((e) => e <= t.s + slack);
      if (i < 0) i = ends.push(0) - 1;
      ends[i] = t.e;
      t.lane = i;
    }
    return ends.length;
  }

  riot.page('stream', (view, ctx) => {
    let span = Number(ctx.query.get('window')) || 60;
    const pick = h('select', {id: 'stream-window', onchange: () => {
      span = Number(pick.value);
      riot.reload();
    }}, WINDOWS.map(([s, label]) => h('option', {value: s, selected: s === span}, label)));
    const canvas = h('canvas', {id: 'stream-canvas'});
    const note = h('p', {class: 'note', id: 'stream-note'});
    const legend = h('p', {class: 'legend'}, Object.entries(COLORS).map(([s, c]) => {
      const sw = h('span', {class: 'swatch'});
      sw.style.background = c;
      return [sw, ' ' + s + ' '];
    }));
    fill(view, h('h1', null, 'Task stream'), h('p', null, 'The last ', pick, ' of work, one lane per worker slot.'),
      legend, h('div', {class: 'stream'}, canvas), note);

    let boxes = []; // [x, y, w, h, key, text] of the bars drawn, for clicks
    const hit = (ev) => {
      const r = canvas.getBoundingClientRect();
      const x = ev.clientX - r.left, y = ev.clientY - r.top;
      return boxes.find((b) => x >= b[0] && x <= b[0] + Math.max(b[2], 3) && y >= b[1] && y <= b[1] + b[3]);
    };
    canvas.addEventListener('click', (ev) => {
      const b = hit(ev);
      if (b) location.hash = '#/workunits/' + encodeURIComponent(b[4]);
    });
    canvas.addEventListener('mousemove', (ev) => {
      const b = hit(ev);
      canvas.title = b ? b[5] : '';
      canvas.style.cursor = b ? 'pointer' : 'default';
    });

    function draw(doc) {
      const now = new Date(doc.now || Date.now()).getTime();
      const from = now - span * 1000;
      const byWorker = new Map();
      for (const t of doc.tasks || []) {
        if (!t.start) continue;
        const task = {key: t.key, status: t.status, worker: t.worker || '?',
          s: new Date(t.start).getTime(), e: t.end ? new Date(t.end).getTime() : now};
        if (task.e < from) continue;
        if (!byWorker.has(task.worker)) byWorker.set(task.worker, []);
        byWorker.get(task.worker).push(task);
      }
      const workers = [...byWorker.keys()].sort();
      const width = Math.max(400, (canvas.parentElement.clientWidth || 800) - 12);
      const plot = width - LABEL - 8;
      const slack = (2 * (now - from)) / plot; // two pixels
      const groups = workers.map((w) => {
        const ts = byWorker.get(w).sort((a, b) => a.s - b.s);
        return {worker: w, tasks: ts, n: lanes(ts, slack)};
      });
      const height = AXIS + groups.reduce((a, g) => a + HEAD + g.n * (LANE + GAP), 0) + 4;
      const dpr = window.devicePixelRatio || 1;
      canvas.width = width * dpr;
      canvas.height = height * dpr;
      canvas.style.width = width + 'px';
      canvas.style.height = height + 'px';
      const c = canvas.getContext('2d');
      c.setTransform(dpr, 0, 0, dpr, 0, 0);
      c.clearRect(0, 0, width, height);
      c.font = '12px system-ui, sans-serif';
      const X = (t) => LABEL + ((Math.max(t, from) - from) / (now - from)) * plot;

      // The time axis: a tick every tenth of the window.
      c.fillStyle = '#666';
      c.strokeStyle = '#e0e0e0';
      for (let i = 0; i <= 10; i++) {
        const x = LABEL + (i * plot) / 10;
        c.beginPath();
        c.moveTo(x, AXIS - 4);
        c.lineTo(x, height);
        c.stroke();
        const ago = span - (i * span) / 10;
        c.textAlign = i === 0 ? 'left' : i === 10 ? 'right' : 'center';
        if (i % 2 === 0) c.fillText(ago ? '−' + (ago < 120 ? ago + ' s' : ago / 60 + ' min') : 'now', x, 12);
      }
      c.textAlign = 'left';
      boxes = [];
      let y = AXIS;
      for (const g of groups) {
        c.fillStyle = '#333';
        c.fillText(g.worker, 4, y + 13);
        y += HEAD;
        for (const t of g.tasks) {
          const x0 = X(t.s), x1 = X(t.e);
          const by = y + t.lane * (LANE + GAP);
          c.fillStyle = COLORS[t.status] || '#757575';
          c.fillRect(x0, by, Math.max(1, x1 - x0 - 1), LANE);
          boxes.push([x0, by, x1 - x0, LANE, t.key, t.key.slice(0, 12) + ' ' + t.status + ' on ' + g.worker + ', ' + fmt.dur((t.e - t.s) / 1000)]);
        }
        y += g.n * (LANE + GAP);
      }
      const n = boxes.length;
      const lanesUsed = groups.reduce((a, g) => a + g.n, 0);
      note.textContent = n ? fmt.num(n) + ' workunits on ' + fmt.num(workers.length) + ' workers, in ' + fmt.num(lanesUsed) + ' lanes.' : 'No workunit ran in this window.';
    }

    return {
      async refresh() {
        const since = new Date(Date.now() - span * 1000).toISOString();
        draw(await api('/api/v1/stream' + query({since})));
      },
    };
  });
})();
