// Failures: failed workunits grouped by their error, newest group first,
// with links to the workunits of each.
(function () {
  'use strict';
  const {h, fill, api} = window.riot;

  riot.page('failures', (view) => {
    const list = h('div', {id: 'failures'});
    fill(view, h('h1', null, 'Failures'), list);
    return {
      async refresh() {
        const r = await api('/api/v1/failures');
        fill(list, riot.failureGroups(r.failures));
      },
    };
  });
})();
