// Replicas: a replicated riotd's replicas (docs/replicas.md) as the leader
// sees them: which one leads, each one's Raft state, term and applied
// index, or why it did not answer. A change of state sends no overview
// event, so the page loads its data again every few seconds while shown.
(function () {
  'use strict';
  const {h, fill, api, fmt, table} = window.riot;

  // stateClass colours a state as the status badges do.
  const stateClass = {Leader: 's-done', Follower: 's-ended', Candidate: 's-waiting', unreachable: 's-error'};
  const state = (r) => h('span', {class: 'badge ' + (stateClass[r.state] || ''), title: r.error || null}, String(r.state || '–'));

  riot.page('replicas', (view) => {
    const summary = h('p', {class: 'about', id: 'replicas-summary'});
    const list = h('div', {id: 'replicas'});
    fill(view, h('h1', null, 'Replicas'), summary, list);
    const timer = setInterval(() => riot.reload(), 3000);

    return {
      async refresh() {
        const rs = (await api('/api/v1/replicas')).replicas || [];
        const leader = rs.find((r) => r.state === 'Leader');
        const voters = rs.filter((r) => r.voter).length;
        const down = rs.filter((r) => r.state === 'unreachable').length;
        summary.textContent = (leader ? 'Leader: ' + leader.id + ' (' + leader.client + ')' : 'No leader') + ' · ' +
          fmt.num(rs.length) + ' replicas, ' + fmt.num(voters) + ' voting' + (down ? ' · ' + fmt.num(down) + ' unreachable' : '');
        fill(list, table([
          ['replica', (r) => h('span', {class: r.state === 'Leader' ? 'leader' : null}, String(r.id))],
          ['state', state],
          ['client address', (r) => r.client || '–'],
          ['replication address', (r) => r.raft || '–'],
          ['voter', (r) => (r.voter ? 'yes' : 'no')],
          ['term', (r) => (r.state === 'unreachable' ? '–' : fmt.num(r.term)), 'n'],
          ['applied index', (r) => (r.state === 'unreachable' ? '–' : fmt.num(r.applied_index)), 'n'],
          ['error', (r) => r.error || ''],
        ], rs, 'No replica is configured.'));
      },
      unmount() {
        clearInterval(timer);
      },
    };
  });
})();
