// Injected into a copy of an `rtrace analyze --html` report and run by headless
// Chromium (html_render_test.sh): measures the charts as the browser lays them
// out and writes what it found, as JSON, into <pre id="rtrace-check">.
(function () {
  const out = { charts: [], clipped: [], overlaps: [], scientific: [] };
  const own = (t) => (t.firstChild && t.firstChild.nodeType === Node.TEXT_NODE ? t.firstChild.nodeValue : t.textContent);
  const boxOf = (e) => e.getBoundingClientRect();
  const intersects = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll('svg')) {
    const holder = svg.closest('.chart');
    const title = holder ? holder.getAttribute('title') : '(inline svg)';
    const s = boxOf(svg);
    const texts = [...svg.querySelectorAll('text')];
    for (const t of texts) {
      const r = boxOf(t);
      if (r.width === 0) continue;
      if (r.left < s.left - 1 || r.right > s.right + 1 || r.top < s.top - 1 || r.bottom > s.bottom + 1)
        out.clipped.push(title + ': ' + own(t));
    }
    const ticks = [...svg.querySelectorAll('text.tick')];
    for (let i = 0; i < ticks.length; ++i)
      for (let j = i + 1; j < ticks.length; ++j)
        if (intersects(boxOf(ticks[i]), boxOf(ticks[j]))) out.overlaps.push(title + ': ' + own(ticks[i]) + ' / ' + own(ticks[j]));
    const legends = [...svg.querySelectorAll('text.legend')];
    // A legend wrapped over lines (issue 30) is one <text> with a <tspan> per line.
    const legendText = (t) => { const l = [...t.querySelectorAll('tspan')]; return l.length ? l.map((x) => x.textContent).join(' ') : own(t); };
    out.charts.push({
      title: title,
      axis_titles: [...svg.querySelectorAll('text.axis-title')].map(own),
      ticks: ticks.map(own),
      legends: legends.map(legendText),
      legend_tooltips: legends.map((t) => { const x = t.querySelector('title'); return x ? x.textContent : legendText(t); }),
      values: [...svg.querySelectorAll('text.value')].map(own),
      texts: texts.map((t) => t.textContent),
      tooltips: [...svg.querySelectorAll('title')].map((t) => t.textContent),
      dashes: [...svg.querySelectorAll('line[stroke-dasharray]')].map((l) => l.getAttribute('stroke-dasharray')),
    });
  }
  out.scientific = (document.body.innerText.match(/[0-9](\.[0-9]+)?e[-+][0-9]+ ?%/g) || []);
  out.text = document.body.innerText;
  const pre = document.createElement('pre');
  pre.id = 'rtrace-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
