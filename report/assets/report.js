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
    cancelled_request_wait: 'Cancelled requests\u2019 wait (censored)', benchmark_duration: 'Benchmark duration'
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
    const config = { type: spec.kind === 'bar' ? 'bar' : 'scatter', data: { datasets: spec.datasets }, options: options };
    if (spec.labels) config.data.labels = spec.labels;
    let points = 0;
    for (const d of spec.datasets) if (!d.guide) points += d.data.filter(function (p) {
      return p !== null && (typeof p === 'number' ? isFinite(p) : p && isFinite(p.y));
    }).length;
    const c = new Chart(canvas, config);
    charts.push({ id: id, title: title, chart: c, canvas: canvas, points: points, datasets: spec.datasets.length });
    return c;
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

  function sloTable(slo, ri) {
    const rows = [el('tr', null, ['SLO', 'target', 'measured', 'unit', 'verdict'].map(function (h) {
      return el('th', { text: h });
    }))];
    for (const s of slo) {
      rows.push(el('tr', null, [
        el('td', { text: s.slo }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'target', 'data-value': String(s.target),
                   text: fmt(s.target) }),
        el('td', { 'data-run': ri, 'data-slo': s.slo, 'data-stat': 'measured',
                   'data-value': typeof s.measured === 'number' ? String(s.measured) : null, text: fmt(s.measured) }),
        el('td', { text: s.unit || '' }),
        el('td', { cls: s.pass ? 'pass' : 'fail', text: s.pass ? 'PASS' : (s.measurable === false ? 'NOT MEASURABLE' : 'FAIL') })
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
        datasets: pts, xunit: 's', yunit: 'ms',
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
        datasets: sets.flight, xunit: 's', yunit: 'requests',
        scales: { x: axis('time (s from start)'), y: axis('requests', { min: 0 }) }
      });
    if (sets.rate.length)
      chart(grid, 'timeline-rates', 'Request throughput (ok requests) and output tokens per ' + w + ' (by completion)', {
        datasets: sets.rate, xunit: 's',
        scales: {
          x: axis('time (s from start)'), y: axis('requests/s', { min: 0, position: 'left' }),
          y1: axis('output tokens/s', { min: 0, position: 'right', grid: { drawOnChartArea: false } })
        }
      });
    if (sets.lag.length)
      chart(grid, 'timeline-lag', 'Schedule lag per ' + w + ' (send time minus intended time)', {
        datasets: sets.lag, xunit: 's', yunit: 'ms',
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
    prompt_tokens: 'Server: prompt tokens'
  };

  const SERVER_UNITS = {
    requests_running: 'requests', requests_waiting: 'requests', kv_cache_usage: 'fraction',
    prefix_cache_hits: 'tokens', prefix_cache_queries: 'tokens', prefix_cache_hit_rate: 'fraction',
    generation_tokens: 'tokens', prompt_tokens: 'tokens'
  };

  function serverCharts(grid, runs, section) {
    const groups = {};
    runs.forEach(function (r, i) {
      (r.server || []).forEach(function (s) {
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

  function runHeader(r, i, multi) {
    const parts = [];
    const c = r.config || {};
    const model = Array.isArray(c.model) ? c.model.join(', ') : (c.model || (c.endpoint && c.endpoint.model_names) || '');
    const load = c.concurrency ? 'concurrency ' + c.concurrency
               : c.request_rate ? c.request_rate + ' requests/s (' + (c.request_distribution || 'poisson') + ')'
               : '';
    parts.push(el('p', { cls: 'meta' }, [(multi ? r.label + ': ' : '') + 'files of ' + r.source + ' in ',
                                          el('code', { text: r.dir })]));
    const bits = [model && 'model ' + model, c.url && 'at ' + c.url, c.endpoint && typeof c.endpoint === 'string' && c.endpoint,
                  load, r.requests + ' requests'].filter(Boolean);
    parts.push(el('p', { cls: 'meta', text: bits.join(' \u00b7 ') }));
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
        box.append(el('h3', { text: 'SLO verdicts: ' + passed + ' of ' + r.slo.length + ' passed' }));
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

    timeline(section(app, 'Timeline').grid, runs);
    histCharts(section(app, 'Sequence lengths').grid, runs);

    const errs = section(app, 'Errors');
    errorsChart(errs.grid, runs, errs.box);
    runs.forEach(function (r) {
      if (r.error_summary && r.error_summary.length) errs.box.append(errorTable(r));
    });

    const srv = section(app, 'Server metrics');
    serverCharts(srv.grid, runs, srv.box);
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

  function pointsTable(p, pi) {
    const closed = p.rows.length && p.rows[0].concurrency !== undefined;
    const cols = [[closed ? 'concurrency' : 'request rate', rowValue], ['offered/s', 'offered_request_rate'],
                  ['ok/s', 'request_throughput'],
                  ['TTFT p50', 'time_to_first_token_p50'], ['TTFT p99', 'time_to_first_token_p99'],
                  ['ITL p50', 'inter_token_latency_p50'], ['ITL p99', 'inter_token_latency_p99'],
                  ['latency p50', 'request_latency_p50'], ['latency p99', 'request_latency_p99'],
                  ['out tok/s', 'output_token_throughput'], ['ok', 'request_count'], ['failed', 'error_count'],
                  ['cancelled', 'cancelled_count']];
    const rows = [el('tr', null, cols.map(function (c) { return el('th', { text: c[0] }); })
      .concat([el('th', { text: 'SLOs' })]))];
    p.rows.forEach(function (row, k) {
      const tr = el('tr');
      for (const [, key] of cols) {
        const v = typeof key === 'function' ? key(row) : row[key];
        tr.append(el('td', { 'data-points': pi, 'data-row': k, 'data-key': typeof key === 'string' ? key : 'value',
                             'data-value': typeof v === 'number' ? String(v) : null, text: fmt(v) }));
      }
      tr.append(el('td', { cls: row.slo_pass ? 'pass' : 'fail', text: row.slo_pass ? 'pass' : 'fail' }));
      rows.push(tr);
    });
    return el('div', { cls: 'scroll' }, [el('table', { cls: 'points', 'data-points': pi }, rows)]);
  }

  /* The capacity found by a search: the highest passing probe's achieved throughput. */
  function capacityRow(p) {
    if (!p.search || p.header.highest_passing === null || p.header.highest_passing === undefined) return null;
    let best = null;
    for (const row of p.rows)
      if (row.slo_pass && row.exit_code === 0 && Math.abs(rowValue(row) - p.header.highest_passing) < 1e-9)
        best = row;
    return best;
  }

  function pagePoints(app, list) {
    const multi = list.length > 1;
    app.append(el('h1', { text: multi ? 'surge: ' + list.length + ' capacity curves compared'
                                      : 'surge report: ' + list[0].label }));
    list.forEach(function (p, pi) {
      const h = p.header;
      app.append(el('p', { cls: 'meta' }, [(multi ? p.label + ': ' : '') + (p.search ? 'capacity search (' + h.kind + ')' :
        'sweep over ' + h.kind) + ' in ', el('code', { text: p.dir })]));
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
      }
      if (h.was_interrupted)
        app.append(el('div', { cls: 'banner', text: 'Interrupted: the curve covers the points measured until then.' }));
    });

    app.append(el('h2', { text: 'Capacity curves' }));
    app.append(el('p', { cls: 'note', text: 'Each point is one load level, joined in the order of the load offered: ' +
      'its request throughput (ok requests/s) against its latency percentiles (from the intended start). Dashed: the SLOs ' +
      'and the capacity found.' }));
    const grid = el('div', { cls: 'grid' });
    app.append(grid);
    const metrics = [['time_to_first_token', 'TTFT'], ['inter_token_latency', 'ITL'], ['request_latency', 'Request latency']];
    for (const [tag, short] of metrics) {
      const sets = [];
      let xmax = 0, ymax = 0;
      list.forEach(function (p, pi) {
        const rows = p.rows.filter(function (r) { return typeof r.request_throughput === 'number'; })
          .slice().sort(function (a, b) { return rowValue(a) - rowValue(b); });
        const xs = rows.map(function (r) { return r.request_throughput; });
        for (const [st, dash] of [['p50', []], ['p99', [5, 4]]]) {
          const ys = rows.map(function (r) { return r[tag + '_' + st]; });
          const d = line((multi ? p.label + ': ' : '') + short + ' ' + st, xs, ys, multi ? pi : (st === 'p50' ? 0 : 1),
                         { pointRadius: 3, borderDash: dash });
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
      check.charts.push({ id: e.id, title: e.title, datasets: e.datasets, points: e.points, painted: painted(e) });
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
    (data.runs || data.points).forEach(function (entry, i) { Object.assign(entry, files[i] || {}); });
    const app = document.getElementById('app');
    app.textContent = '';
    if (data.kind === 'points') pagePoints(app, data.points);
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
