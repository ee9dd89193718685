/*
 * surge's report page: draws the data surge wrote into the page with Chart.js. "surge-data" holds the charts'
 * data, "surge-files" the files' own numbers (summaries, verdicts, points) at full precision. Everything heavy
 * (exact percentiles, downsampling, binning) was done by surge; this only lays out tables and charts. When it is done it writes a self-check into #selfcheck (charts drawn, points in each,
 * whether data pixels were painted, errors, time to draw) that the tests read from the rendered page.
 */
(function () {
  'use strict';

  const started = performance.now();
  const check = { charts: [], errors: [], render_ms: null, ok: false };
  window.addEventListener('error', function (e) { check.errors.push(String(e.message)); });

  const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#e377c2', '#17becf', '#bcbd22',
                  '#8c564b', '#7f3fbf'];
  const charts = [];

  /* ---------- small helpers ---------- */

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        if (attrs[k] === undefined || attrs[k] === null) continue;
        if (k === 'text') e.textContent = attrs[k];
        else if (k === 'cls') e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (const c of children || []) e.append(c);
    return e;
  }

  /* The one number format of the page: integers whole, others with 2 decimals, small ones 3 significant. */
  function fmt(v) {
    if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v)) return '\u2014';
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    const a = Math.abs(v);
    if (a >= 1000) return v.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
    if (a >= 1) return v.toFixed(2);
    if (a === 0) return '0';
    return String(Number(v.toPrecision(3)));
  }

  function color(i, alpha) {
    const c = COLORS[i % COLORS.length];
    if (alpha === undefined) return c;
    const n = parseInt(c.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + alpha + ')';
  }

  const UNITS = {
    time_to_first_token: 'ms', time_to_first_token_from_send: 'ms', inter_token_latency: 'ms',
    request_latency: 'ms', request_latency_from_send: 'ms', schedule_lag: 'ms'
  };
  const NAMES = {
    time_to_first_token: 'Time to first token', time_to_first_token_from_send: 'Time to first token from send',
    time_to_second_token: 'Time to second token', inter_token_latency: 'Inter-token latency',
    inter_chunk_latency: 'Inter-chunk latency', request_latency: 'Request latency',
    request_latency_from_send: 'Request latency from send', schedule_lag: 'Schedule lag',
    output_sequence_length: 'Output sequence length', input_sequence_length: 'Input sequence length',
    output_token_throughput_per_user: 'Output token throughput per user',
    output_token_throughput: 'Output token throughput', input_token_throughput: 'Input token throughput',
    total_token_throughput: 'Total token throughput', request_throughput: 'Request throughput',
    request_count: 'Request count (ok)', error_request_count: 'Error request count (failed)',
    cancelled_request_count: 'Cancelled request count', offered_request_rate: 'Offered request rate',
    cancelled_request_wait: 'Cancelled requests\u2019 wait (censored)', benchmark_duration: 'Benchmark duration',
    client_cpu_time: 'Client CPU, load phase', client_cpu_time_user: 'Client CPU, load phase, user',
    client_cpu_time_system: 'Client CPU, load phase, system', process_cpu_time: 'Client CPU, whole process',
    process_cpu_time_user: 'Client CPU, whole process, user', process_cpu_time_system: 'Client CPU, whole process, system',
    output_tokens_per_process_cpu_sec: 'Output tokens per client CPU-second (whole process)',
    output_tokens_per_client_cpu_sec: 'Output tokens per client CPU-second (load phase)',
    tool_call_count: 'Tool calls per response', tool_call_token_count: 'Tool-call tokens per response',
    time_to_first_tool_call_token: 'Time to first tool-call token', tool_call_total: 'Tool calls (all responses)',
    tool_call_token_share: 'Tool-call share of output tokens'
  };
  function nameOf(tag) { return NAMES[tag] || tag.replace(/_/g, ' '); }

  /* ---------- charts ---------- */

  function axis(title, extra) {
    return Object.assign({ type: 'linear', title: { display: true, text: title }, ticks: { maxTicksLimit: 9 } },
                         extra || {});
  }

  /* A chart in a box of the grid. kind: 'xy' (lines or points on two linear axes) or 'bar'. */
  function chart(grid, id, title, spec) {
    const box = el('div', { cls: 'chart', id: 'chart-' + id });
    const canvas = el('canvas', { 'data-chart': id });
    box.append(canvas);
    grid.append(box);
    const xu = spec.xunit ? ' ' + spec.xunit : '', yu = spec.yunit ? ' ' + spec.yunit : '';
    const options = {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: spec.kind === 'bar' ? undefined : false,
      normalized: true,
      interaction: { mode: 'nearest', intersect: false },
      plugins: {
        title: { display: true, text: title, font: { size: 14 } },
        legend: { display: spec.datasets.length > 1, labels: { boxWidth: 14 } },
        tooltip: {
          callbacks: {
            label: function (ctx) {
              const p = ctx.raw;
              if (spec.kind === 'bar') return ctx.dataset.label + ': ' + fmt(ctx.parsed.y) + yu;
              const y = spec.ytip ? spec.ytip(p.y) : fmt(p.y) + yu;
              return ctx.dataset.label + ': ' + y + ' at ' + fmt(p.x) + xu;
            }
          }
        }
      },
      scales: spec.scales
    };
    if (spec.kind !== 'bar') fitAxes(spec.datasets, options.scales || {});
    const config = { type: spec.kind === 'bar' ? 'bar' : 'scatter', data: { datasets: spec.datasets }, options: options };
    if (spec.labels) config.data.labels = spec.labels;
    let bandsDrawn = 0;
    if (spec.bands && spec.bands.length) config.plugins = [bandsPlugin(spec.bands, function (n) { bandsDrawn = n; })];
    let points = 0;
    for (const d of spec.datasets) if (!d.guide) points += d.data.filter(function (p) {
      return p !== null && (typeof p === 'number' ? isFinite(p) : p && isFinite(p.y));
    }).length;
    const c = new Chart(canvas, config);
    charts.push({ id: id, title: title, chart: c, canvas: canvas, points: points, datasets: spec.datasets.length,
                  bar: spec.kind === 'bar', bands: function () { return bandsDrawn; } });
    return c;
  }

  /* Time windows shaded behind a chart's data (client stalls: {start, end} in the x axis' seconds), each with a thin
   * edge so one narrower than a pixel still shows; says how many it drew inside the plot area. */
  function bandsPlugin(bands, drawn) {
    return {
      id: 'bands',
      beforeDatasetsDraw: function (c) {
        const x = c.scales.x, a = c.chartArea, ctx = c.ctx;
        if (!x || !a) return;
        let n = 0;
        ctx.save();
        for (const b of bands) {
          const l = Math.max(a.left, x.getPixelForValue(b.start)), r = Math.min(a.right, x.getPixelForValue(b.end));
          if (!(r >= l - 1) || r < a.left || l > a.right) continue;
          const rgb = b.rgb || '214, 39, 40';
          ctx.fillStyle = 'rgba(' + rgb + ', 0.18)';
          ctx.fillRect(l, a.top, Math.max(2, r - l), a.bottom - a.top);
          ctx.fillStyle = 'rgba(' + rgb + ', 0.7)';
          ctx.fillRect(l, a.top, 1, a.bottom - a.top);
          n++;
        }
        ctx.restore();
        drawn(n);
      }
    };
  }

  /* A run's client stalls (red) and the windows its server refused connections (grey) as bands for its timeline
   * charts (none for a peer's run, or a run that had none). */
  function stallBands(runs) {
    const out = [];
    for (const r of runs) {
      for (const w of (r.stalls && r.stalls.windows) || [])
        if (typeof w.start === 'number' && typeof w.end === 'number') out.push({ start: w.start, end: w.end });
      for (const w of r.unreachable || [])
        if (typeof w.start === 'number' && typeof w.end === 'number')
          out.push({ start: w.start, end: w.end, rgb: '90, 90, 90' });
    }
    return out;
  }

  /* The windows in which a run's server refused connections: when, how many connects were refused, how many
   * requests were due then, and whether it came back. */
  function unreachableTable(runs) {
    const list = runs.filter(function (r) { return r.unreachable && r.unreachable.length > 0; });
    if (!list.length) return null;
    const heads = ['run', 'from (s)', 'to (s)', 'length (s)', 'connects refused', 'slots waiting', 'requests due',
                   'came back'];
    const rows = [el('tr', null, heads.map(function (h) { return el('th', { text: h }); }))];
    let n = 0;
    list.forEach(function (r) {
      r.unreachable.forEach(function (w, k) {
        n++;
        const cells = [['start', w.start], ['end', w.end], ['length_s', w.end - w.start], ['refused', w.refused],
                       ['slots_waiting', w.slots_waiting], ['requests', w.requests],
                       ['recovered', w.recovered ? 'yes' : 'no (the run ended first)']];
        rows.push(el('tr', null, [el('td', { text: r.label })].concat(cells.map(function (c) {
          return el('td', { 'data-unreachable': k, 'data-field': c[0], 'data-value': String(c[1]),
                            text: typeof c[1] === 'number' ? fmt(c[1]) : c[1] });
        }))));
      });
    });
    return el('div', { cls: 'stalls unreachable' }, [
      el('h3', { text: 'Server unreachable: ' + fmt(n) + ' window' + (n === 1 ? '' : 's') }),
      el('p', { cls: 'note', text: 'The server refused connections (it was down or restarting): requests due then ' +
        'failed to connect or waited for it, as docs/metrics.md describes. That is the server, not ' +
        'the client. Shaded grey on the timeline charts.' }),
      el('div', { cls: 'scroll' }, [el('table', { cls: 'unreachable' }, rows)])
    ]);
  }

  /* The client stalls of each run that had any: when, how late, how many requests were due in them. */
  function stallTable(runs) {
    const list = runs.filter(function (r) { return r.stalls && r.stalls.count > 0; });
    if (!list.length) return null;
    const heads = ['run', 'worker', 'from (s)', 'to (s)', 'length (ms)', 'max lag (ms)', 'requests due'];
    const rows = [el('tr', null, heads.map(function (h) { return el('th', { text: h }); }))];
    list.forEach(function (r) {
      r.stalls.windows.forEach(function (w, k) {
        const cells = [['worker', w.worker], ['start', w.start], ['end', w.end], ['length_ms', (w.end - w.start) * 1e3],
                       ['max_lag_ms', w.max_lag_ms], ['requests', w.requests]];
        rows.push(el('tr', null, [el('td', { text: r.label })].concat(cells.map(function (c) {
          return el('td', { 'data-stall': k, 'data-field': c[0], 'data-value': String(c[1]), text: fmt(c[1]) });
        }))));
      });
      if (r.stalls.not_listed > 0)
        rows.push(el('tr', null, [el('td', { text: r.label }), el('td', { colspan: 6,
          text: 'and ' + fmt(r.stalls.not_listed) + ' more windows, past what each worker keeps' })]));
    });
    const n = list.reduce(function (a, r) { return a + r.stalls.count; }, 0);
    const thr = list[0].stalls.threshold_ms;
    return el('div', { cls: 'stalls' }, [
      el('h3', { text: 'Client stalls: ' + fmt(n) + ' window' + (n === 1 ? '' : 's') }),
      el('p', { cls: 'note', text: 'A worker of the client ran more than ' + fmt(thr) + ' ms behind its schedule ' +
        '(descheduled, blocked or short of CPU): requests due in these windows went out late and what arrived ' +
        'then was timed late. That is the client, not the server. Shaded on the timeline charts.' }),
      el('div', { cls: 'scroll' }, [el('table', { cls: 'stalls' }, rows)])
    ]);
  }

  /* Axes from the data: every point inside them. Chart.js takes data given unparsed (parsing: false) as sorted by
   * x: it reads the x range from the first and last points only, and draws only the points it finds by bisecting.
   * A capacity curve is in the order of the load offered, and an overloaded server achieves less at a higher
   * load, so its x values go back: such a set is parsed. Each axis without a fixed end gets the data's own
   * extremes (the guides' included) as its suggested ones. */
  function fitAxes(datasets, scales) {
    const ext = {};
    for (const d of datasets) {
      let sorted = true, prev = -Infinity;
      for (const p of d.data) {
        if (!p || typeof p.x !== 'number' || !isFinite(p.x)) continue;
        if (p.x < prev) sorted = false;
        prev = p.x;
        for (const [id, v] of [[d.xAxisID || 'x', p.x], [d.yAxisID || 'y', p.y]]) {
          if (typeof v !== 'number' || !isFinite(v)) continue;
          const e = ext[id] || (ext[id] = { min: v, max: v });
          e.min = Math.min(e.min, v);
          e.max = Math.max(e.max, v);
        }
      }
      if (!sorted) d.parsing = { xAxisKey: 'x', yAxisKey: 'y' };
    }
    for (const id of Object.keys(ext)) {
      const sc = scales[id];
      if (!sc) continue;
      if (sc.max === undefined) sc.suggestedMax = ext[id].max;
      if (sc.min === undefined) sc.suggestedMin = ext[id].min;
    }
  }

  /* For the self-check: each axis' range as drawn, the data's extremes on it (guides left out), and how many data
   * points were placed inside the plot area. */
  function shownOf(entry) {
    const c = entry.chart, a = c.chartArea, out = { scales: {}, data: {}, shown: 0 };
    for (const id of Object.keys(c.scales)) out.scales[id] = { min: c.scales[id].min, max: c.scales[id].max };
    if (entry.bar) return out;
    c.data.datasets.forEach(function (d, i) {
      if (d.guide) return;
      for (const p of d.data) {
        for (const [id, v] of [[d.xAxisID || 'x', p.x], [d.yAxisID || 'y', p.y]]) {
          if (typeof v !== 'number' || !isFinite(v)) continue;
          const e = out.data[id] || (out.data[id] = { min: v, max: v });
          e.min = Math.min(e.min, v);
          e.max = Math.max(e.max, v);
        }
      }
      for (const el of c.getDatasetMeta(i).data) {
        if (el && isFinite(el.x) && isFinite(el.y) && !el.skip && el.x >= a.left - 1 && el.x <= a.right + 1 &&
            el.y >= a.top - 1 && el.y <= a.bottom + 1) out.shown++;
      }
    });
    return out;
  }

  function line(label, xs, ys, i, opts) {
    const data = [];
    for (let k = 0; k < xs.length; k++) if (ys[k] !== null && ys[k] !== undefined) data.push({ x: xs[k], y: ys[k] });
    // a short series shows its points: a line of one point would draw nothing
    return Object.assign({ label: label, data: data, showLine: true, pointRadius: data.length < 30 ? 2.5 : 0, borderWidth: 1.6,
                           borderColor: color(i), backgroundColor: color(i, 0.5) }, opts || {});
  }

  function dots(label, xs, ys, i) {
    const data = [];
    for (let k = 0; k < xs.length; k++) if (ys[k] !== null && ys[k] !== undefined) data.push({ x: xs[k], y: ys[k] });
    return { label: label, data: data, showLine: false, pointRadius: 1.6, pointHoverRadius: 4, borderWidth: 0,
             borderColor: color(i), backgroundColor: color(i, 0.6) };
  }

  /* A horizontal or vertical guide line (an SLO, the capacity found): drawn, but not counted as data. */
  function guide(label, a, b, i) {
    return { label: label, data: [a, b], showLine: true, pointRadius: 0, borderWidth: 1.4, borderDash: [6, 4],
             borderColor: color(i), backgroundColor: color(i, 0.3), guide: true };
  }

  /* ---------- tables ---------- */

  const STATS = ['avg', 'min', 'max', 'p50', 'p90', 'p95', 'p99', 'std', 'count'];

  function summaryTable(run, ri) {
    const head = el('tr', null, [el('th', { text: 'Metric' }), el('th', { text: 'Unit' })]
      .concat(STATS.map(function (s) { return el('th', { text: s }); })));
    const rows = [head];
    for (const tag of Object.keys(run.summary || {})) {
      const m = run.summary[tag];
      const tr = el('tr', { 'data-tag': tag }, [el('td', { text: nameOf(tag) }), el('td', { text: m.unit })]);
      for (const s of STATS) {
        const v = m[s];
        tr.append(el('td', { 'data-run': ri, 'data-tag': tag, 'data-stat': s,
                             'data-value': typeof v === 'number' ? String(v) : null, text: fmt(v) }));
      }
      rows.push(tr);
    }
    return el('div', { cls: 'scroll' }, [el('table', { cls: 'summary', 'data-run': ri }, rows)]);
  }

  /* A verdict's outcome: the file's "verdict" (pass, fail, inconclusive), else its pass flag (older files). */
  function sloState(s) {
    if (s.verdict === 'pass' || s.verdict === 'fail' || s.verdict === 'inconclusive') return s.verdict;
    return s.pass ? 'pass' : 'fail';
  }

  /* A verdict's interval as "lo .. hi" (an open end: -inf / inf), or '' when the check has none. */
  function sloInterval(s) {
    if (!Array.isArray(s.interval)) return '';
    const end = function (v, open) { return typeof v === 'number' ? fmt(v) : open; };
    return end(s.interval[0], '-inf') + ' .. ' + end(s.interval[1], 'inf');
  }

  function sloTable(slo, ri) {
    const level = slo.length && typeof slo[0].confidence_level === 'number' ? slo[0].confidence_level : null;
    const heads = ['SLO', 'target', 'measured', 'n', level ? fmt(100 * level) + '% interval' : 'interval', 'unit',
                   'verdict'];
    const rows = [el('tr', null, heads.map(function (h) { return el('th', { text: h }); }))];
    for (const s of slo) {
      const state = sloState(s);
      rows.push(el('tr', null, [
        el('td', { text: s.slo }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'target', 'data-value': String(s.target),
                   text: fmt(s.target) }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'measured',
                   'data-value': typeof s.measured === 'number' ? String(s.measured) : null, text: fmt(s.measured) }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'n',
                   'data-value': typeof s.n === 'number' ? String(s.n) : null, text: typeof s.n === 'number' ? fmt(s.n) : '' }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'interval', text: sloInterval(s) }),
        el('td', { text: s.unit || '' }),
        el('td', { cls: state, 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'verdict',
                   text: s.measurable === false ? 'NOT MEASURABLE' : state.toUpperCase() })
      ]));
    }
    return el('table', { cls: 'slo', 'data-run': ri }, rows);
  }

  /* The differences of each run from the first, on the numbers people compare. */
  const DIFF_ROWS = [
    ['time_to_first_token', 'p50'], ['time_to_first_token', 'p99'], ['inter_token_latency', 'p50'],
    ['inter_token_latency', 'p99'], ['request_latency', 'p50'], ['request_latency', 'p99'],
    ['output_token_throughput', 'avg'], ['request_throughput', 'avg'], ['request_count', 'avg'],
    ['error_request_count', 'avg'], ['cancelled_request_count', 'avg'], ['offered_request_rate', 'avg']
  ];
  const HIGHER_IS_BETTER = { output_token_throughput: true, request_throughput: true, request_count: true };

  function diffTable(runs) {
    const head = el('tr', null, [el('th', { text: 'Metric' })].concat(runs.map(function (r, i) {
      return el('th', { text: r.label + (i ? ' (\u0394 vs ' + runs[0].label + ')' : '') });
    })));
    const rows = [head];
    for (const [tag, stat] of DIFF_ROWS) {
      const base = runs[0].summary && runs[0].summary[tag];
      if (!base) continue;
      const unit = base.unit ? ' (' + base.unit + ')' : '';
      const tr = el('tr', null, [el('td', { text: nameOf(tag) + (stat === 'avg' ? '' : ' ' + stat) + unit })]);
      runs.forEach(function (r, i) {
        const m = r.summary && r.summary[tag];
        const v = m ? m[stat] : null;
        let text = fmt(v), cls = null;
        if (i > 0 && typeof v === 'number' && typeof base[stat] === 'number' && base[stat] !== 0) {
          const d = (v - base[stat]) / Math.abs(base[stat]) * 100;
          text += ' (' + (d >= 0 ? '+' : '') + d.toFixed(1) + '%)';
          const better = HIGHER_IS_BETTER[tag] ? d > 0 : d < 0;
          if (Math.abs(d) >= 1 && tag !== 'request_count') cls = better ? 'better' : 'worse';
        }
        tr.append(el('td', { cls: cls, 'data-run': i, 'data-tag': tag, 'data-stat': stat,
                             'data-value': typeof v === 'number' ? String(v) : null, text: text }));
      });
      rows.push(tr);
    }
    return el('table', { cls: 'diff' }, rows);
  }

  /* ---------- a page of runs ---------- */

  function cdfSets(runs, tag, fromSend) {
    const sets = [];
    runs.forEach(function (r, i) {
      const c = r.cdf && r.cdf[tag];
      const many = runs.length > 1;
      if (c && c.n > 0) sets.push(line((many ? r.label + ': ' : '') + 'from intended start', c.x, c.q, i));
      const s = fromSend && r.cdf && r.cdf[fromSend];
      if (s && s.n > 0 && r.source === 'surge')
        sets.push(line((many ? r.label + ': ' : '') + 'from send', s.x, s.q, i, many ? { borderDash: [5, 4] } : {
          borderColor: color(i + 1), backgroundColor: color(i + 1, 0.5) }));
    });
    return sets;
  }

  function cdfChart(grid, runs, id, tag, fromSend, note) {
    const sets = cdfSets(runs, tag, fromSend);
    if (!sets.length) return;
    chart(grid, id, nameOf(tag) + ': CDF' + (note || ''), {
      datasets: sets, xunit: 'ms',
      ytip: function (q) { return 'p' + fmt(q * 100); },
      scales: { x: axis(nameOf(tag) + ' (ms)'), y: axis('fraction of requests at or below', { min: 0, max: 1 }) }
    });
  }

  function binTimes(b) {
    const xs = [];
    const n = b.request_rate.length;
    for (let k = 0; k < n; k++) xs.push((k + 0.5) * b.width_s);
    return xs;
  }

  function timeline(grid, runs) {
    const one = runs.length === 1;
    const bands = stallBands(runs);
    // per-request points
    const pts = [];
    runs.forEach(function (r, i) {
      const p = r.points;
      if (!p || !p.t.length) return;
      const pre = one ? '' : r.label + ': ';
      pts.push(dots(pre + 'TTFT', p.t, p.ttft, one ? 0 : i));
      pts.push(dots(pre + 'latency', p.t, p.latency, one ? 1 : i));
    });
    if (pts.length) {
      const down = runs.some(function (r) { return r.points && r.points.downsampled; });
      chart(grid, 'timeline-requests', 'Each request by its intended send time' + (down ? ' (worst per time bin)' : ''), {
        bands: bands, datasets: pts, xunit: 's', yunit: 'ms',
        scales: { x: axis('intended send time (s from start)'), y: axis('ms from the intended start') }
      });
    }
    const sets = { flight: [], rate: [], lag: [] };
    runs.forEach(function (r, i) {
      const b = r.bins;
      if (!b || !b.request_rate.length) return;
      const xs = binTimes(b), pre = one ? '' : r.label + ': ';
      sets.flight.push(line(pre + 'in flight (sent, not ended)', xs, b.in_flight, one ? 0 : i));
      sets.flight.push(line(pre + 'outstanding (due, not ended)', xs, b.outstanding, one ? 1 : i,
                            one ? {} : { borderDash: [5, 4] }));
      sets.rate.push(line(pre + 'ok requests/s', xs, b.request_rate, one ? 0 : i, { yAxisID: 'y' }));
      sets.rate.push(line(pre + 'output tokens/s', xs, b.output_token_rate, one ? 3 : i,
                          { yAxisID: 'y1', borderDash: one ? [] : [5, 4] }));
      if (r.source === 'surge') {
        sets.lag.push(line(pre + 'max', xs, b.schedule_lag_max, one ? 1 : i));
        sets.lag.push(line(pre + 'mean', xs, b.schedule_lag_mean, one ? 0 : i, one ? {} : { borderDash: [5, 4] }));
      }
    });
    const w = runs[0].bins ? fmt(runs[0].bins.width_s) + ' s' : '';
    if (sets.flight.length)
      chart(grid, 'timeline-inflight', 'Requests in flight and outstanding (mean per ' + w + ')', {
        bands: bands, datasets: sets.flight, xunit: 's', yunit: 'requests',
        scales: { x: axis('time (s from start)'), y: axis('requests', { min: 0 }) }
      });
    if (sets.rate.length)
      chart(grid, 'timeline-rates', 'Request throughput (ok requests) and output tokens per ' + w + ' (by completion)', {
        bands: bands, datasets: sets.rate, xunit: 's',
        scales: {
          x: axis('time (s from start)'), y: axis('requests/s', { min: 0, position: 'left' }),
          y1: axis('output tokens/s', { min: 0, position: 'right', grid: { drawOnChartArea: false } })
        }
      });
    if (sets.lag.length)
      chart(grid, 'timeline-lag', 'Schedule lag per ' + w + ' (send time minus intended time)', {
        bands: bands, datasets: sets.lag, xunit: 's', yunit: 'ms',
        scales: { x: axis('intended send time (s from start)'), y: axis('schedule lag (ms)', { min: 0 }) }
      });
  }

  function errorsChart(grid, runs, section) {
    const sets = [];
    let labels = null;
    runs.forEach(function (r, i) {
      const b = r.bins;
      if (!b || !b.error_classes.length) return;
      const xs = binTimes(b);
      if (runs.length === 1) labels = xs.map(function (x) { return fmt(x); });
      b.error_classes.forEach(function (cls, k) {
        const label = (runs.length > 1 ? r.label + ': ' : '') + cls;
        if (runs.length === 1)
          sets.push({ label: label, data: b.errors[k], backgroundColor: color(k + 1), stack: 'e' });
        else
          sets.push(line(label, xs, b.errors[k].map(function (v) { return v / b.width_s; }), i, { borderDash: k ? [5, 4] : [] }));
      });
    });
    if (!sets.length) {
      section.append(el('p', { cls: 'note', text: 'No request failed.' }));
      return;
    }
    if (labels)
      chart(grid, 'errors', 'Failed requests by class per ' + fmt(runs[0].bins.width_s) + ' s', {
        kind: 'bar', datasets: sets, labels: labels, yunit: 'requests',
        scales: { x: { stacked: true, title: { display: true, text: 'time (s from start)' } },
                  y: { stacked: true, beginAtZero: true, title: { display: true, text: 'failed requests' } } }
      });
    else
      chart(grid, 'errors', 'Failed requests by class', {
        datasets: sets, xunit: 's', yunit: 'failures/s',
        scales: { x: axis('time (s from start)'), y: axis('failures/s', { min: 0 }) }
      });
  }

  function histCharts(grid, runs) {
    for (const tag of ['input_sequence_length', 'output_sequence_length']) {
      const sets = [];
      let labels = null, lo = null, width = null;
      runs.forEach(function (r) {
        const h = r.hist && r.hist[tag];
        if (!h) return;
        lo = lo === null ? h.lo : Math.min(lo, h.lo);
        width = width === null ? h.width : Math.max(width, h.width);
      });
      if (lo === null) continue;
      let hi = lo;
      runs.forEach(function (r) {
        const h = r.hist && r.hist[tag];
        if (h) hi = Math.max(hi, h.lo + h.width * h.counts.length);
      });
      width = Math.max(width, Math.ceil((hi - lo) / 50)); // runs of different lengths share at most 50 bins
      const nb = Math.max(1, Math.ceil((hi - lo) / width));
      labels = [];
      for (let k = 0; k < nb; k++)
        labels.push(width === 1 ? String(lo + k) : (lo + k * width) + '\u2013' + (lo + (k + 1) * width - 1));
      runs.forEach(function (r, i) {
        const h = r.hist && r.hist[tag];
        if (!h) return;
        const counts = new Array(nb).fill(0);
        h.counts.forEach(function (c, k) {
          const v = h.lo + k * h.width;
          counts[Math.min(nb - 1, Math.floor((v - lo) / width))] += c;
        });
        sets.push({ label: runs.length > 1 ? r.label : 'requests', data: counts, backgroundColor: color(i, 0.75) });
      });
      chart(grid, 'hist-' + tag, nameOf(tag) + ' (tokens)', {
        kind: 'bar', datasets: sets, labels: labels, yunit: 'requests',
        scales: { x: { title: { display: true, text: nameOf(tag) + ' (tokens)' } },
                  y: { beginAtZero: true, title: { display: true, text: 'requests' } } }
      });
    }
  }

  const SERVER_TITLES = {
    requests_running: 'Server: requests running', requests_waiting: 'Server: requests waiting',
    kv_cache_usage: 'Server: KV-cache usage', prefix_cache_hits: 'Server: prefix-cache hits',
    prefix_cache_queries: 'Server: prefix-cache queries', generation_tokens: 'Server: tokens generated',
    prompt_tokens: 'Server: prompt tokens', gpu_utilization: 'GPU: utilisation', gpu_memory_used: 'GPU: memory used',
    gpu_memory_free: 'GPU: memory free', gpu_power: 'GPU: power', gpu_sm_clock: 'GPU: SM clock',
    gpu_temperature: 'GPU: temperature', gpu_memory_copy_utilization: 'GPU: memory-copy utilisation',
    gpu_encoder_utilization: 'GPU: encoder utilisation', gpu_decoder_utilization: 'GPU: decoder utilisation',
    gpu_sm_active: 'GPU: SM active', gpu_xid_errors: 'GPU: last XID error'
  };

  const SERVER_UNITS = {
    requests_running: 'requests', requests_waiting: 'requests', kv_cache_usage: 'fraction',
    prefix_cache_hits: 'tokens', prefix_cache_queries: 'tokens', prefix_cache_hit_rate: 'fraction',
    generation_tokens: 'tokens', prompt_tokens: 'tokens', gpu_utilization: '%', gpu_memory_used: 'MiB',
    gpu_memory_free: 'MiB', gpu_power: 'W', gpu_sm_clock: 'MHz', gpu_temperature: '\u00b0C',
    gpu_memory_copy_utilization: '%', gpu_encoder_utilization: '%', gpu_decoder_utilization: '%',
    gpu_sm_active: 'ratio', gpu_xid_errors: 'XID'
  };

  /* Tool calls (docs/metrics.md, *Tool calls*), only for runs whose responses made some: how many responses made
   * calls and how many, their argument tokens and share of the output, and when the first argument fragment came
   * against the first token; the summary's own figures (data-tool: its tag, data-stat), the share in percent. */
  const TOOL_COLS = [
    ['responses with calls', 'tool_call_count', 'count'], ['calls', 'tool_call_total', 'avg'],
    ['calls per response avg', 'tool_call_count', 'avg'], ['calls per response max', 'tool_call_count', 'max'],
    ['tool-call tokens per response avg', 'tool_call_token_count', 'avg'],
    ['tool-call tokens p50', 'tool_call_token_count', 'p50'], ['tool-call tokens p99', 'tool_call_token_count', 'p99'],
    ['share of output tokens (%)', 'tool_call_token_share', 'avg', 100],
    ['first tool-call token p50 (ms)', 'time_to_first_tool_call_token', 'p50'],
    ['first tool-call token p90 (ms)', 'time_to_first_tool_call_token', 'p90'],
    ['first tool-call token p99 (ms)', 'time_to_first_tool_call_token', 'p99'],
    ['TTFT p50 (ms)', 'time_to_first_token', 'p50']
  ];

  function toolSection(app, runs) {
    const list = runs.filter(function (r) { return r.summary && r.summary.tool_call_count; });
    if (!list.length) return;
    const s = section(app, 'Tool calls');
    cdfChart(s.grid, runs, 'cdf-tool', 'time_to_first_tool_call_token', null);
    const rows = [el('tr', null, [el('th', { text: 'run' })].concat(TOOL_COLS.map(function (c) {
      return el('th', { text: c[0] });
    })))];
    runs.forEach(function (r, ri) {
      if (!r.summary || !r.summary.tool_call_count) return;
      rows.push(el('tr', null, [el('td', { text: r.label })].concat(TOOL_COLS.map(function (c) {
        const m = r.summary[c[1]], v = m && typeof m[c[2]] === 'number' ? m[c[2]] * (c[3] || 1) : null;
        return el('td', { 'data-run': ri, 'data-tool': c[1], 'data-stat': c[2] + (c[3] ? '_percent' : ''),
                          'data-value': v === null ? null : String(v), text: fmt(v) });
      }))));
    });
    s.box.append(el('div', { cls: 'scroll' }, [el('table', { cls: 'tools' }, rows)]));
    s.box.append(el('p', { cls: 'note', text: 'A tool call\u2019s arguments are output tokens: they count in OSL, ' +
      'and the first argument fragment of a streamed call is timed from the intended start, as TTFT is. ' +
      'Whole (not streamed) responses have no tool-call timing.' }));
  }

  /* The summary's gpu_telemetry (DCGM exporter): one row per GPU, the figures as the summary has them. The first
   * columns always; each of the others where some GPU has it (the exporter's fields vary), so that every gauge the
   * summary holds is on the page. [field, heading, gauge, statistic] */
  const GPU_COLS = [
    ['util_avg', 'util avg (%)', 'gpu_utilization', 'avg'], ['util_max', 'util max (%)', 'gpu_utilization', 'max'],
    ['mem_used_max', 'memory used max (MiB)', 'gpu_memory_used', 'max'], ['power_avg', 'power avg (W)', 'gpu_power', 'avg'],
    ['energy_j', 'energy (J)', null, null], ['sm_clock_avg', 'SM clock avg (MHz)', 'gpu_sm_clock', 'avg'],
    ['temp_max', 'temperature max (\u00b0C)', 'gpu_temperature', 'max']
  ];
  const GPU_MORE_COLS = [
    ['power_max', 'power max (W)', 'gpu_power', 'max'],
    ['mem_free_min', 'memory free min (MiB)', 'gpu_memory_free', 'min'],
    ['mem_copy_util_avg', 'memory-copy util avg (%)', 'gpu_memory_copy_utilization', 'avg'],
    ['enc_util_avg', 'encoder util avg (%)', 'gpu_encoder_utilization', 'avg'],
    ['dec_util_avg', 'decoder util avg (%)', 'gpu_decoder_utilization', 'avg'],
    ['sm_active_avg', 'SM active avg (ratio)', 'gpu_sm_active', 'avg'],
    ['xid_last', 'last XID error', 'gpu_xid_errors', 'last']
  ];
  function gpuTable(runs) {
    const list = runs.filter(function (r) { return r.gpu && r.gpu.gpus && r.gpu.gpus.length; });
    if (!list.length) return null;
    const st = function (g, c) {
      if (!c[2]) return g.energy && typeof g.energy.value === 'number' ? g.energy.value : null;
      return g[c[2]] && typeof g[c[2]][c[3]] === 'number' ? g[c[2]][c[3]] : null;
    };
    const cols = GPU_COLS.concat(GPU_MORE_COLS.filter(function (c) {
      return list.some(function (r) { return r.gpu.gpus.some(function (g) { return st(g, c) !== null; }); });
    }));
    const heads = ['run', 'GPU', 'model'].concat(cols.map(function (c) { return c[1]; }));
    const rows = [el('tr', null, heads.map(function (h) { return el('th', { text: h }); }))];
    list.forEach(function (r) {
      r.gpu.gpus.forEach(function (g, k) {
        rows.push(el('tr', null, [el('td', { text: r.label }), el('td', { text: g.gpu }),
                                  el('td', { text: g.model_name || '' })].concat(cols.map(function (c) {
          const v = st(g, c);
          return el('td', { 'data-gpu': k, 'data-field': c[0], 'data-value': v === null ? null : String(v),
                            text: fmt(v) });
        }))));
      });
    });
    const notes = list.map(function (r) {
      const g = r.gpu, src = g.energy_source === 'power_integral' ? 'the power gauge integrated between scrapes'
        : g.energy_source === 'energy_counter' ? 'the energy counter\u2019s increase' : 'counter or power';
      return typeof g.tokens_per_joule === 'number'
        ? (runs.length > 1 ? r.label + ': ' : '') + fmt(g.tokens_per_joule) + ' output tokens per joule (' +
          fmt(g.output_tokens) + ' tokens / ' + fmt(g.energy_j) + ' J over every GPU, from ' + src + ')'
        : (runs.length > 1 ? r.label + ': ' : '') + 'energy not known for every GPU: no tokens per joule';
    });
    return el('div', { cls: 'gpu' }, [
      el('h3', { text: 'GPU telemetry (DCGM exporter)' }),
      el('div', { cls: 'scroll' }, [el('table', { cls: 'gpu' }, rows)]),
      el('p', { cls: 'note', 'data-field': 'tokens_per_joule', text: notes.join('; ') })
    ]);
  }

  function serverCharts(grid, runs, section) {
    const groups = {};
    runs.forEach(function (r, i) {
      (r.server || []).forEach(function (s) {
        if (s.known === 'gpu_energy') return; // its rate is the power, charted as such; the energy is in the table
        (groups[s.known] = groups[s.known] || []).push({ run: r, i: i, s: s });
      });
    });
    const names = Object.keys(groups);
    if (!names.length) {
      section.append(el('p', { cls: 'note', text: 'No server metrics: run surge profile with --server-metrics-url.' }));
      return;
    }
    for (const known of names) {
      const list = groups[known];
      const rate = list[0].s.rate;
      const sets = list.map(function (g, k) {
        const labels = g.s.labels ? Object.keys(g.s.labels).map(function (l) { return l + '=' + g.s.labels[l]; }) : [];
        const label = (runs.length > 1 ? g.run.label + ': ' : '') + g.s.name + (labels.length ? '{' + labels.join(',') + '}' : '');
        // the baseline scrape, a moment before the start, is drawn at the start
        const ts = g.s.t.map(function (t) { return Math.max(0, t); });
        return line(label, ts, g.s.v, runs.length > 1 ? g.i : k, { pointRadius: 1.5, stepped: !rate });
      });
      const unit = (SERVER_UNITS[known] || '') + (rate ? '/s' : '');
      chart(grid, 'server-' + known, (SERVER_TITLES[known] || 'Server: ' + known) + (rate ? ' (rate)' : ''), {
        datasets: sets, xunit: 's', yunit: unit,
        scales: { x: axis('time (s from start)'), y: axis(unit || 'value', { min: 0 }) }
      });
    }
  }

  /* ---------- where the figures came from ---------- */

  /* "2026-11-28T03:20:41.580071Z" as "2026-11-28 03:20:41 UTC". */
  function when(iso) {
    const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)/.exec(iso || '');
    return m ? m[1] + ' ' + m[2] + (/Z$|[+-]00:?00$/.test(iso) ? ' UTC' : '') : (iso || '');
  }

  function tokens(mean, sd) {
    return typeof mean === 'number' && mean >= 0 ? 'mean ' + fmt(mean) + ', stddev ' + fmt(sd || 0) : null;
  }

  /* The arrival process: open loop (Poisson, constant, gamma, a trace) or a closed loop, as the configuration (and,
   * for a sweep or search, its header) says. */
  function arrivals(c, p) {
    const dist = c.request_distribution || 'poisson';
    const burst = dist === 'gamma' && typeof c.burstiness === 'number' ? ' (burstiness ' + fmt(c.burstiness) + ')' : '';
    const process = dist + burst + ' arrivals';
    if (c.fixed_schedule) {
      const sp = c.fixed_schedule_speedup;
      return 'trace replay: each request at its timestamp in the input file (--fixed-schedule' +
             (typeof sp === 'number' && sp !== 1 ? ', speed-up ' + fmt(sp) : '') + ')';
    }
    if (p) {
      const h = p.header || {};
      if (p.search) {
        const hi = h.range_hi === null || h.range_hi === undefined ? 'no upper bound' : fmt(h.range_hi);
        const range = fmt(h.range_lo) + ' to ' + hi;
        return h.kind === 'max-concurrency' ? 'closed loop: concurrency searched from ' + range
                                            : process + ': request rate searched from ' + range + ' requests/s';
      }
      const values = (h.values || []).map(fmt).join(', ');
      return h.kind === 'concurrency' ? 'closed loop: concurrency ' + values
                                      : process + ' at ' + values + ' requests/s';
    }
    if (c.request_rate === 'inf') return 'every request at once (--request-rate inf)';
    if (typeof c.request_rate === 'number')
      return process + ' at ' + fmt(c.request_rate) + ' requests/s' +
             (c.max_concurrency ? ', at most ' + fmt(c.max_concurrency) + ' in flight' : '');
    const lg = c.loadgen || {};
    const conc = typeof c.concurrency === 'number' ? c.concurrency : lg.concurrency;
    if (typeof conc === 'number') return 'closed loop: concurrency ' + fmt(conc);
    if (typeof lg.request_rate === 'number')
      return (lg.request_rate_mode || 'poisson') + ' arrivals at ' + fmt(lg.request_rate) + ' requests/s';
    return null;
  }

  /* How long each run (each point, each probe) lasted. */
  function length(c, p) {
    const lg = c.loadgen || {};
    const count = typeof c.request_count === 'number' ? c.request_count : lg.request_count;
    const each = p ? (p.search ? ' per probe' : ' per point') : '';
    const bits = [];
    if (typeof c.benchmark_duration === 'number') bits.push(fmt(c.benchmark_duration) + ' s' + each);
    if (typeof count === 'number') bits.push(fmt(count) + ' requests' + each);
    if (c.warmup_request_count) bits.push(fmt(c.warmup_request_count) + ' warmup requests');
    return bits.length ? bits.join(', ') : null;
  }

  function prompts(c) {
    const bits = [];
    if (c.input_file) bits.push('prompts from ' + c.input_file + (c.input_format ? ' (' + c.input_format + ')' : ''));
    const inp = ((c.input || {}).prompt || {}).input_tokens || {};
    const mean = c.synthetic_input_tokens_mean, sd = c.synthetic_input_tokens_stddev;
    const isl = tokens(typeof mean === 'number' ? mean : inp.mean, typeof sd === 'number' ? sd : inp.stddev);
    if (!c.input_file && isl)
      bits.push('ISL ' + isl + ' tokens' + (c.isl_estimate === 'words' ? ' (counted as words)' : ''));
    if (typeof c.output_tokens_mean === 'number')
      bits.push(c.output_tokens_mean > 0 ? 'OSL ' + tokens(c.output_tokens_mean, c.output_tokens_stddev) + ' tokens'
                                         : 'OSL not set (the server decides)');
    if (!c.input_file && typeof c.num_prompts === 'number') bits.push(fmt(c.num_prompts) + ' distinct prompts');
    return bits.length ? bits.join('; ') : null;
  }

  function endpoint(c) {
    const e = typeof c.endpoint === 'object' && c.endpoint ? c.endpoint : {};
    const type = c.endpoint_type || e.type;
    const url = c.url || e.url || c.u;
    const path = typeof c.endpoint === 'string' ? c.endpoint : '';
    const streaming = typeof c.streaming === 'boolean' ? c.streaming : e.streaming;
    const model = Array.isArray(c.model) ? c.model.join(', ') : (c.model || (e.model_names || []).join(', '));
    const bits = [];
    if (type || url) bits.push((type || '') + (url ? ' at ' + url + path : ''));
    if (typeof streaming === 'boolean') bits.push(streaming ? 'streaming' : 'not streaming');
    if (model) bits.push('model ' + model);
    return bits.length ? bits.join(', ') : null;
  }

  /* The block every page opens with: the command line, the workload, the tool's version, the host and the date,
   * each as the run's files recorded it ("not recorded" where they do not). */
  function metaBlock(meta, config, p, attrs) {
    meta = meta || {};
    const c = config || {};
    const tool = meta.tool || 'surge';
    const t0 = when(meta.start_time), t1 = when(meta.end_time);
    // the end without its day when it is the start's
    const date = t0 ? t0 + (t1 ? ' to ' + (t1.slice(0, 11) === t0.slice(0, 11) ? t1.slice(11) : t1) : '') : null;
    const rows = [
      ['command', 'Command', meta.command],
      ['arrivals', 'Arrivals', arrivals(c, p)],
      ['length', p && p.search ? 'Probe length' : 'Length', length(c, p)],
      ['prompts', 'Prompts', prompts(c)],
      ['endpoint', 'Endpoint', endpoint(c)],
      ['version', 'Version', meta.version ? tool + ' ' + meta.version : null],
      ['host', 'Host', meta.host],
      ['date', 'Date', date]
    ];
    const trs = rows.map(function (r) {
      const td = el('td', Object.assign({ 'data-meta': r[0], 'data-key': 'meta-' + r[0] }, attrs),
                    [r[2] ? (r[0] === 'command' ? el('code', { text: r[2] }) : r[2]) : 'not recorded']);
      if (!r[2]) td.className = 'unknown';
      return el('tr', null, [el('th', { text: r[1] }), td]);
    });
    return el('table', { cls: 'meta-info' }, trs);
  }

  function runHeader(r, i, multi) {
    const parts = [];
    parts.push(el('p', { cls: 'meta' }, [(multi ? r.label + ': ' : '') + 'files of ' + r.source + ' in ',
                                          el('code', { text: r.dir }), ': ' + fmt(r.requests) + ' requests read']));
    parts.push(metaBlock(r.meta, r.config, null, { 'data-run': i }));
    if (r.interrupted)
      parts.push(el('div', { cls: 'banner', text: 'This run was interrupted: the figures cover what it measured until then.' }));
    const cc = r.summary && r.summary.cancelled_request_count;
    if (cc && cc.avg > 0) {
      const w = r.summary.cancelled_request_wait || {};
      parts.push(el('div', { cls: 'banner', 'data-key': 'cancelled',
        text: fmt(cc.avg) + ' requests were cancelled by surge, neither ok nor failed: they are in no error chart and no distribution (censored: each one\u2019s ' +
              'latency is at least its wait' + (w.max !== undefined ? ', up to ' + fmt(w.max) + ' ms' : '') + ').' }));
    }
    return parts;
  }

  function pageRuns(app, runs) {
    const multi = runs.length > 1;
    app.append(el('h1', { text: multi ? 'surge: ' + runs.length + ' runs compared' : 'surge report: ' + runs[0].label }));
    runs.forEach(function (r, i) { runHeader(r, i, multi).forEach(function (p) { app.append(p); }); });

    if (multi) {
      app.append(el('h2', { text: 'Differences' }));
      app.append(diffTable(runs));
    }
    app.append(el('h2', { text: 'Summary' }));
    runs.forEach(function (r, i) {
      const box = multi ? el('details', null, [el('summary', { text: r.label })]) : app;
      if (multi) app.append(box);
      if (r.slo && r.slo.length) {
        const passed = r.slo.filter(function (s) { return s.pass; }).length;
        const undecided = r.slo.filter(function (s) { return sloState(s) === 'inconclusive'; }).length;
        const level = typeof r.slo[0].confidence_level === 'number' ? ' at ' + fmt(100 * r.slo[0].confidence_level) +
          '% confidence' : '';
        box.append(el('h3', { text: 'SLO verdicts' + level + ': ' + passed + ' of ' + r.slo.length + ' passed' +
                                    (undecided ? ', ' + undecided + ' inconclusive' : '') }));
        box.append(sloTable(r.slo, i));
      }
      box.append(summaryTable(r, i));
    });

    const grid = section(app, 'Latency distributions').grid;
    grid.before(el('p', { cls: 'note', text: 'From the intended start: what a user waits when the client keeps to its ' +
      'schedule (free of coordinated omission). From send: what the server alone took.' }));
    cdfChart(grid, runs, 'cdf-ttft', 'time_to_first_token', 'time_to_first_token_from_send');
    cdfChart(grid, runs, 'cdf-latency', 'request_latency', 'request_latency_from_send');
    cdfChart(grid, runs, 'cdf-itl', 'inter_token_latency', null);
    if (runs.some(function (r) { return r.source === 'surge'; }))
      cdfChart(grid, runs.filter(function (r) { return r.source === 'surge'; }), 'cdf-lag', 'schedule_lag', null);

    const tl = section(app, 'Timeline');
    timeline(tl.grid, runs);
    const st = stallTable(runs);
    if (st) tl.box.append(st);
    const un = unreachableTable(runs);
    if (un) tl.box.append(un);
    histCharts(section(app, 'Sequence lengths').grid, runs);
    toolSection(app, runs);

    const errs = section(app, 'Errors');
    errorsChart(errs.grid, runs, errs.box);
    runs.forEach(function (r) {
      if (r.error_summary && r.error_summary.length) errs.box.append(errorTable(r));
    });

    const srv = section(app, 'Server metrics');
    serverCharts(srv.grid, runs, srv.box);
    const gt = gpuTable(runs);
    if (gt) srv.box.append(gt);
  }

  /* A heading, then a box holding a grid of charts (and whatever notes or tables go after them). */
  function section(app, title) {
    const box = el('section'), grid = el('div', { cls: 'grid' });
    app.append(el('h2', { text: title }));
    app.append(box);
    box.append(grid);
    return { box: box, grid: grid };
  }

  /* The error summary, surge's ({label, message}) or AIPerf's ({error_details: {type, message}}). */
  function errorTable(r) {
    const rows = [el('tr', null, ['run', 'class', 'count', 'example'].map(function (h) { return el('th', { text: h }); }))];
    for (const e of r.error_summary) {
      const d = e.error_details || {};
      rows.push(el('tr', null, [el('td', { text: r.label }), el('td', { text: e.label || e.class || d.type || '' }),
                                el('td', { text: fmt(e.count) }), el('td', { text: e.message || d.message || '' })]));
    }
    return el('table', { cls: 'errors' }, rows);
  }

  /* ---------- a page of sweeps or searches ---------- */

  function rowValue(row) { return row.concurrency !== undefined ? row.concurrency : row.request_rate; }

  /* A probe's or point's state: the file's verdict ("pass", "fail", "inconclusive") where it has one, else its
   * pass flag (a search's probes), else its SLOs and exit status (a sweep's points). */
  function rowState(row) {
    const v = row.verdict;
    const named = typeof v === 'string' ? v : (v && typeof v === 'object' ? (v.verdict || v.state || v.result) : null);
    if (named === 'pass' || named === 'fail' || named === 'inconclusive') return named;
    if (typeof row.pass === 'boolean') return row.pass ? 'pass' : 'fail';
    return row.slo_pass && (row.exit_code === 0 || row.exit_code === undefined) ? 'pass' : 'fail';
  }

  /* Why a row did not pass, in words: the file's reason, else its failed SLOs with what they measured, else its
   * exit status (docs/cli.md). */
  function rowWhy(row) {
    const v = row.verdict;
    for (const w of [row.why, v && typeof v === 'object' ? (v.why || v.reason) : null, row.verdict_why, row.reason])
      if (typeof w === 'string' && w) return w;
    if (rowState(row) === 'pass') return '';
    const parts = [];
    for (const e of row.slo || []) {
      if (!e || !(e.pass === false || e.verdict === 'fail' || e.verdict === 'inconclusive')) continue;
      const said = typeof e.why === 'string' && e.why ? ': ' + e.why : '';
      parts.push(e.slo + (typeof e.measured === 'number' ? ' measured ' + fmt(e.measured) : ' not measurable') +
                 (e.verdict === 'inconclusive' ? ' (inconclusive)' : '') + said);
    }
    if (row.was_interrupted) parts.push('interrupted');
    if (row.exit_code === 1)
      parts.push(fmt(row.error_count) + ' of ' + fmt(rowN(row)) + ' requests failed (above --max-error-rate)');
    else if (row.exit_code && row.exit_code !== 4 && !row.was_interrupted) parts.push('exit status ' + row.exit_code);
    return parts.join('; ');
  }

  /* The requests a row measured: ok and failed. */
  function rowN(row) {
    return (typeof row.request_count === 'number' ? row.request_count : 0) +
           (typeof row.error_count === 'number' ? row.error_count : 0);
  }

  function pointsTable(p, pi) {
    const closed = p.rows.length && p.rows[0].concurrency !== undefined;
    const cols = [[closed ? 'concurrency' : 'request rate', rowValue], ['offered/s', 'offered_request_rate'],
                  ['ok/s', 'request_throughput'],
                  ['TTFT p50', 'time_to_first_token_p50'], ['TTFT p99', 'time_to_first_token_p99'],
                  ['ITL p50', 'inter_token_latency_p50'], ['ITL p99', 'inter_token_latency_p99'],
                  ['latency p50', 'request_latency_p50'], ['latency p99', 'request_latency_p99'],
                  ['out tok/s', 'output_token_throughput'], ['ok', 'request_count'], ['failed', 'error_count'],
                  ['cancelled', 'cancelled_count'], ['n', rowN]];
    // the cancellation test's requests (--request-cancellation-rate): a column where the run had one
    const rate = p.config && p.config.request_cancellation_rate;
    if ((typeof rate === 'number' && rate > 0) || p.rows.some(function (r) { return r.cancelled_by_test_count > 0; }))
      cols.splice(cols.length - 1, 0, ['cancelled_by_test', 'cancelled_by_test_count']);
    if (!p.search && p.rows.some(function (r) { return r.trial > 1; })) cols.splice(1, 0, ['run', 'trial']);
    const rows = [el('tr', null, cols.map(function (c) { return el('th', { text: c[0] }); })
      .concat([el('th', { text: 'verdict' })]))];
    p.rows.forEach(function (row, k) {
      const state = rowState(row), why = rowWhy(row);
      const tr = el('tr', { cls: 'row-' + state });
      for (const [, key] of cols) {
        const v = typeof key === 'function' ? key(row) : row[key];
        tr.append(el('td', { 'data-points': pi, 'data-row': k,
                             'data-key': typeof key === 'string' ? key : (key === rowN ? 'n' : 'value'),
                             'data-value': typeof v === 'number' ? String(v) : null, text: fmt(v) }));
      }
      tr.append(el('td', { cls: state, 'data-points': pi, 'data-row': k, 'data-key': 'verdict',
                           text: state === 'pass' ? 'pass' : state.toUpperCase() }));
      rows.push(tr);
      // the reason on a line of its own under the row, across the table
      if (why)
        rows.push(el('tr', { cls: 'why row-' + state }, [el('td', {
          colspan: cols.length + 1, 'data-points': pi, 'data-row': k, 'data-key': 'why', text: 'why: ' + why })]));
    });
    return el('div', { cls: 'scroll' }, [el('table', { cls: 'points', 'data-points': pi }, rows)]);
  }

  /* The capacity found by a search: the highest passing probe's achieved throughput. */
  function capacityRow(p) {
    if (!p.search || p.header.highest_passing === null || p.header.highest_passing === undefined) return null;
    let best = null;
    for (const row of p.rows)
      if (rowState(row) === 'pass' && Math.abs(rowValue(row) - p.header.highest_passing) < 1e-9)
        best = row;
    return best;
  }

  const POINT_STYLE = { pass: 'circle', fail: 'crossRot', inconclusive: 'triangle' };

  /* The rows with a throughput, by load offered: one group per load (a sweep of multi-runs has a row per run). */
  function loadGroups(p) {
    const rows = p.rows.filter(function (r) { return typeof r.request_throughput === 'number'; })
      .slice().sort(function (a, b) { return rowValue(a) - rowValue(b); });
    const groups = [];
    for (const r of rows) {
      const last = groups[groups.length - 1];
      if (last && rowValue(last[0]) === rowValue(r)) last.push(r);
      else groups.push([r]);
    }
    return groups;
  }

  function groupState(g) {
    const st = g.map(rowState);
    return st.indexOf('fail') >= 0 ? 'fail' : st.indexOf('inconclusive') >= 0 ? 'inconclusive' : 'pass';
  }

  function groupMean(g, key) {
    const v = g.map(function (r) { return r[key]; }).filter(function (x) { return typeof x === 'number'; });
    return v.length ? v.reduce(function (a, b) { return a + b; }, 0) / v.length : null;
  }

  function pagePoints(app, list) {
    const multi = list.length > 1;
    app.append(el('h1', { text: multi ? 'surge: ' + list.length + ' capacity curves compared'
                                      : 'surge report: ' + list[0].label }));
    list.forEach(function (p, pi) {
      const h = p.header;
      app.append(el('p', { cls: 'meta' }, [(multi ? p.label + ': ' : '') + (p.search ? 'capacity search (' + h.kind + ')' :
        'sweep over ' + h.kind) + ' in ', el('code', { text: p.dir })]));
      app.append(metaBlock(p.meta, p.config, p, { 'data-points': pi }));
      if (p.search) {
        const closed = h.kind === 'max-concurrency';
        const unit = closed ? '' : ' requests/s';
        let text = h.highest_passing === null ? 'No probe passed.' :
          'Capacity: ' + fmt(h.highest_passing) + unit + (closed ? ' concurrent requests' : ' offered') + ' pass';
        const cap = capacityRow(p);
        if (cap) text += ' (request throughput ' + fmt(cap.request_throughput) + ' ok requests/s)';
        if (h.lowest_failing !== null && h.lowest_failing !== undefined)
          text += '; ' + fmt(h.lowest_failing) + unit + ' fail' + (h.lowest_failing_why ? ': ' + h.lowest_failing_why : '');
        app.append(el('div', { cls: 'answer', 'data-points': pi, 'data-key': 'answer', text: (multi ? p.label + ': ' : '') + text }));
        // the point estimate beside the verdicts (docs/capacity.md, "The point estimate"): where an isotonic fit over
        // every probe crosses the SLOs' targets; absent in an older search.json, null without evidence
        // a search that stopped before an answer (a dead server: docs/capacity.md) says why, and has no estimate
        if (h.stopped_why)
          app.append(el('div', { cls: 'banner', 'data-points': pi, 'data-key': 'stopped',
            text: (multi ? p.label + ': ' : '') + 'Search stopped before an answer: ' + h.stopped_why }));
        const est = h.stopped_why ? null : h.capacity_estimate;
        if (est && typeof est.value === 'number') {
          const by = est.set_by === 'probe' ? 'the probe\u2019s own test (overload, --max-error-rate)' : est.set_by;
          const lead = est.kind === 'at_least' ? 'at least ' : est.kind === 'below' ? 'below ' : '';
          const where = est.kind === 'at_least' ? ', the highest value tried: every SLO is met there on the fitted curve'
            : est.kind === 'below' ? ', the lowest value tried: ' + by + ' is missed there on the fitted curve'
            : ', where ' + by + ' crosses its target on the fitted curve';
          app.append(el('div', { cls: 'answer', 'data-points': pi, 'data-key': 'estimate',
            text: (multi ? p.label + ': ' : '') + 'Point estimate: ' + lead + fmt(est.value) + (closed ? ' concurrent requests' : unit) + where +
              ' (isotonic fit over ' + est.probes + ' probe' + (est.probes === 1 ? '' : 's') +
              '). An estimate, not a confidence statement: the passing and failing values above are the verdict.' }));
        }
      }
      if (h.was_interrupted)
        app.append(el('div', { cls: 'banner', text: 'Interrupted: the curve covers the points measured until then.' }));
    });

    app.append(el('h2', { text: 'Capacity curves' }));
    app.append(el('p', { cls: 'note', text: 'Each point is one load level, joined in the order of the load offered: ' +
      'its request throughput (ok requests/s) against its latency percentiles (from the intended start). A dot passed, ' +
      'a cross failed, a triangle was inconclusive (the table says why). Dashed: the SLOs and the capacity found.' +
        (list.some(function (p) { return loadGroups(p).some(function (g) { return g.length > 1; }); })
        ? ' A load run several times (--num-profile-runs) is the mean of its runs; each load\u2019s confidence intervals ' +
          'are in its directory\u2019s aggregate/ (surge report that directory).' : '') }));
    const grid = el('div', { cls: 'grid' });
    app.append(grid);
    const metrics = [['time_to_first_token', 'TTFT'], ['inter_token_latency', 'ITL'], ['request_latency', 'Request latency']];
    for (const [tag, short] of metrics) {
      const sets = [];
      let xmax = 0, ymax = 0;
      list.forEach(function (p, pi) {
        const groups = loadGroups(p);
        const xs = groups.map(function (g) { return groupMean(g, 'request_throughput'); });
        for (const [st, dash] of [['p50', []], ['p99', [5, 4]]]) {
          const ys = groups.map(function (g) { return groupMean(g, tag + '_' + st); });
          // each point marked by its state: a dot passed, a cross failed, a triangle was inconclusive (a load run
          // several times: failed when one run failed, else inconclusive when one was)
          const states = groups.filter(function (g, k) { return ys[k] !== null && ys[k] !== undefined; }).map(groupState);
          const d = line((multi ? p.label + ': ' : '') + short + ' ' + st, xs, ys, multi ? pi : (st === 'p50' ? 0 : 1),
                         { borderDash: dash,
                           pointStyle: states.map(function (x) { return POINT_STYLE[x]; }),
                           pointRadius: states.map(function (x) { return x === 'pass' ? 3 : 5; }) });
          if (d.data.length) sets.push(d);
          ys.forEach(function (y) { if (typeof y === 'number') ymax = Math.max(ymax, y); });
        }
        xs.forEach(function (x) { xmax = Math.max(xmax, x); });
      });
      if (!sets.length) continue;
      let gi = 2;
      list.forEach(function (p) {
        for (const s of p.slo || []) {
          if (s.metric !== tag) continue;
          ymax = Math.max(ymax, s.target);
          sets.push(guide('SLO ' + s.slo, { x: 0, y: s.target }, { x: xmax * 1.05, y: s.target }, gi++));
        }
        const cap = capacityRow(p);
        if (cap)
          sets.push(guide((multi ? p.label + ': ' : '') + 'capacity ' + fmt(cap.request_throughput) + ' ok/s',
                          { x: cap.request_throughput, y: 0 }, { x: cap.request_throughput, y: ymax * 1.05 }, 2));
      });
      chart(grid, 'capacity-' + tag, short + ' against throughput', {
        datasets: sets, xunit: 'ok/s', yunit: 'ms',
        scales: { x: axis('request throughput (ok requests/s)', { min: 0 }), y: axis(short + ' (ms)', { min: 0 }) }
      });
    }
    app.append(el('h2', { text: 'Points' }));
    list.forEach(function (p, pi) {
      if (multi) app.append(el('h3', { text: p.label }));
      app.append(pointsTable(p, pi));
    });
  }

  /* ---------- a page of multi-runs (--num-profile-runs) ---------- */

  const MULTI_KEYS = [['time_to_first_token', ['avg', 'p50', 'p90', 'p99']], ['inter_token_latency', ['avg', 'p50', 'p90', 'p99']],
                      ['request_latency', ['avg', 'p50', 'p90', 'p99']], ['output_token_throughput', ['avg']],
                      ['total_token_throughput', ['avg']], ['request_throughput', ['avg']]];

  /* The interval's half-width: none without a t value (a single run). */
  function halfWidth(m) {
    return typeof m.t_critical === 'number' && typeof m.ci_low === 'number' && typeof m.ci_high === 'number'
      ? (m.ci_high - m.ci_low) / 2 : null;
  }

  function multiTable(mr, mi, keys) {
    const cols = [['mean', 'mean'], ['\u00b1 CI', halfWidth], ['CI low', 'ci_low'], ['CI high', 'ci_high'], ['CV', 'cv'],
                  ['std', 'std'], ['min', 'min'], ['max', 'max'], ['runs', 'n']];
    const rows = [el('tr', null, [el('th', { text: 'Metric' }), el('th', { text: 'Unit' })]
      .concat(cols.map(function (c) { return el('th', { text: c[0] }); })))];
    for (const key of keys) {
      const m = mr.metrics[key];
      const tr = el('tr', null, [el('td', { text: key }), el('td', { text: m.unit || '' })]);
      for (const [, col] of cols) {
        const v = typeof col === 'function' ? col(m) : m[col];
        const name = typeof col === 'function' ? 'half_width' : col;
        const text = name === 'cv' && typeof v === 'number' ? fmt(v * 100) + '%' : fmt(v);
        tr.append(el('td', { 'data-multi': mi, 'data-key': key, 'data-col': name,
                             'data-value': typeof v === 'number' ? String(v) : null, text: text }));
      }
      rows.push(tr);
    }
    return el('div', { cls: 'scroll' }, [el('table', { cls: 'multi', 'data-multi': mi }, rows)]);
  }

  function pageMulti(app, list) {
    const multi = list.length > 1;
    app.append(el('h1', { text: multi ? 'surge: ' + list.length + ' multi-runs compared' : 'surge report: ' + list[0].label }));
    list.forEach(function (mr) {
      const md = mr.metadata || {};
      let t = null;
      for (const k of Object.keys(mr.metrics)) if (typeof mr.metrics[k].t_critical === 'number') { t = mr.metrics[k].t_critical; break; }
      app.append(el('p', { cls: 'meta' }, [(multi ? mr.label + ': ' : '') + 'multi-run: ' + md.num_successful_runs + ' of ' +
        md.num_profile_runs + ' runs in the aggregate, ' + fmt(md.confidence_level * 100) + '% confidence interval of the ' +
        'mean (Student\u2019s t' + (t !== null ? ', t = ' + t.toFixed(4) : '') + '), in ', el('code', { text: mr.dir })]));
      if (md.was_interrupted)
        app.append(el('div', { cls: 'banner', text: 'Interrupted: the aggregate covers the runs completed before the interrupt.' }));
      const failed = md.failed_runs || [];
      if (failed.length)
        app.append(el('div', { cls: 'banner', text: 'Not in the aggregate: ' + failed.map(function (f) {
          return f.label + ' (' + f.error + ')'; }).join('; ') }));
      if (md.num_successful_runs < 2)
        app.append(el('div', { cls: 'banner', text: 'One run in the aggregate: no interval (it needs two runs or more).' }));
    });

    app.append(el('h2', { text: 'Per run' }));
    app.append(el('p', { cls: 'note', text: 'Each dot is one run\u2019s figure (from its own summary); the solid line is ' +
      'the mean across the runs, the dashed lines the confidence interval around it.' }));
    const grid = el('div', { cls: 'grid' });
    app.append(grid);
    for (const [tag, short] of [['time_to_first_token', 'TTFT'], ['inter_token_latency', 'ITL'], ['request_latency', 'Request latency']]) {
      const sets = [];
      let gi = 0, xmax = 1;
      list.forEach(function (mr, mi) {
        const runs = mr.per_run || [];
        const xs = runs.map(function (r, k) { return k + 1; });
        xmax = Math.max(xmax, runs.length);
        ['p50', 'p99'].forEach(function (st, si) {
          const ys = runs.map(function (r) { const m = r.summary[tag]; return m && typeof m[st] === 'number' ? m[st] : null; });
          const ci = multi ? mi : si;
          const d = line((multi ? mr.label + ': ' : '') + short + ' ' + st, xs, ys, ci, { showLine: false, pointRadius: 4 });
          if (!d.data.length) return;
          sets.push(d);
          const a = mr.metrics[tag + '_' + st];
          if (!a) return;
          sets.push(Object.assign(guide('mean ' + st, { x: 0.5, y: a.mean }, { x: runs.length + 0.5, y: a.mean }, ci),
                                  { borderDash: [] }));
          if (halfWidth(a) !== null) {
            sets.push(guide('CI low ' + st, { x: 0.5, y: a.ci_low }, { x: runs.length + 0.5, y: a.ci_low }, ci));
            sets.push(guide('CI high ' + st, { x: 0.5, y: a.ci_high }, { x: runs.length + 0.5, y: a.ci_high }, ci));
          }
          gi++;
        });
      });
      if (!gi) continue;
      chart(grid, 'runs-' + tag, short + ' p50 and p99, run by run', {
        datasets: sets, xunit: '', yunit: 'ms',
        scales: { x: axis('run', { min: 0, max: xmax + 1, ticks: { stepSize: 1, callback: function (v) {
                    return v >= 1 && v <= xmax && Number.isInteger(v) ? String(v) : ''; } } }),
                  y: axis(short + ' (ms)', { min: 0 }) }
      });
    }

    app.append(el('h2', { text: 'Across the runs' }));
    list.forEach(function (mr, mi) {
      if (multi) app.append(el('h3', { text: mr.label }));
      const keys = [];
      for (const [tag, stats] of MULTI_KEYS) for (const st of stats) if (mr.metrics[tag + '_' + st]) keys.push(tag + '_' + st);
      app.append(multiTable(mr, mi, keys));
      const rest = Object.keys(mr.metrics).filter(function (k) { return keys.indexOf(k) < 0; });
      if (rest.length) {
        const d = el('details', null, [el('summary', { text: 'Every metric and statistic (' + rest.length + ' more)' })]);
        d.append(multiTable(mr, mi, rest));
        app.append(d);
      }
    });
  }

  /* ---------- the self-check ---------- */

  /* Pixels of the plot area in a saturated colour: the data's, not the grid's or the text's greys. */
  function painted(entry) {
    const c = entry.chart, a = c.chartArea;
    if (!a || a.right <= a.left || a.bottom <= a.top) return 0;
    const r = c.currentDevicePixelRatio || 1;
    const ctx = entry.canvas.getContext('2d');
    const img = ctx.getImageData(Math.floor(a.left * r), Math.floor(a.top * r), Math.max(1, Math.floor((a.right - a.left) * r)),
                                 Math.max(1, Math.floor((a.bottom - a.top) * r))).data;
    let n = 0;
    for (let k = 0; k < img.length; k += 4) {
      const mx = Math.max(img[k], img[k + 1], img[k + 2]), mn = Math.min(img[k], img[k + 1], img[k + 2]);
      if (img[k + 3] > 100 && mx - mn > 60) n++;
    }
    return n;
  }

  function finish() {
    for (const e of charts)
      check.charts.push(Object.assign({ id: e.id, title: e.title, datasets: e.datasets, points: e.points,
                                        painted: painted(e), bands: e.bands() }, shownOf(e)));
    check.render_ms = Math.round(performance.now());
    check.draw_ms = Math.round(performance.now() - started);
    check.ok = check.errors.length === 0 && check.charts.every(function (c) { return c.points > 0 && c.painted > 0; });
    const sc = document.getElementById('selfcheck');
    sc.textContent = JSON.stringify(check);
    document.body.setAttribute('data-rendered', check.ok ? 'ok' : 'failed');
  }

  try {
    const data = JSON.parse(document.getElementById('surge-data').textContent);
    const files = JSON.parse(document.getElementById('surge-files').textContent) || [];
    (data.runs || data.points || data.multi).forEach(function (entry, i) { Object.assign(entry, files[i] || {}); });
    const app = document.getElementById('app');
    app.textContent = '';
    if (data.kind === 'points') pagePoints(app, data.points);
    else if (data.kind === 'multi') pageMulti(app, data.multi);
    else pageRuns(app, data.runs);
    app.append(el('footer', { text: 'Written by surge report. Charts: Chart.js. Percentiles are exact; the timeline ' +
      'draws a sample of requests when there are many (each time bin\u2019s worst always among them).' }));
  } catch (e) {
    check.errors.push(String(e && e.stack || e));
    throw e;
  } finally {
    finish();
  }
})();
