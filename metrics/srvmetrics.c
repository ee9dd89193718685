/* The scraped server metrics: series, samples, known names, files (sg_srvmetrics.h). */
#include "sg_export_util.h"
#include "sg_prom.h"
#include "sg_srvmetrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The known metrics. A row matches a metric by name and, where it has one, by one label's value (TensorRT-LLM's
 * backend puts the state in a label). Names checked against each server's source or docs: vLLM (vllm/v1/metrics,
 * the v0 names too), SGLang (sglang/srt/metrics/collector.py), llama.cpp (tools/server: --metrics), Triton's
 * TensorRT-LLM backend (nv_trt_llm_*).
 */
static const struct {
    const char *metric, *label, *label_value, *known;
} KNOWN[] = {
    {"vllm:num_requests_running", NULL, NULL, "requests_running"},
    {"vllm:num_requests_waiting", NULL, NULL, "requests_waiting"},
    {"vllm:kv_cache_usage_perc", NULL, NULL, "kv_cache_usage"},
    {"vllm:gpu_cache_usage_perc", NULL, NULL, "kv_cache_usage"},
    {"vllm:prefix_cache_hits_total", NULL, NULL, "prefix_cache_hits"},
    {"vllm:prefix_cache_queries_total", NULL, NULL, "prefix_cache_queries"},
    {"vllm:gpu_prefix_cache_hits_total", NULL, NULL, "prefix_cache_hits"},
    {"vllm:gpu_prefix_cache_queries_total", NULL, NULL, "prefix_cache_queries"},
    {"vllm:prompt_tokens_total", NULL, NULL, "prompt_tokens"},
    {"vllm:generation_tokens_total", NULL, NULL, "generation_tokens"},
    {"sglang:num_running_reqs", NULL, NULL, "requests_running"},
    {"sglang:num_queue_reqs", NULL, NULL, "requests_waiting"},
    {"sglang:token_usage", NULL, NULL, "kv_cache_usage"},
    {"sglang:cache_hit_rate", NULL, NULL, "prefix_cache_hit_rate"},
    {"sglang:prompt_tokens_total", NULL, NULL, "prompt_tokens"},
    {"sglang:generation_tokens_total", NULL, NULL, "generation_tokens"},
    {"llamacpp:requests_processing", NULL, NULL, "requests_running"},
    {"llamacpp:requests_deferred", NULL, NULL, "requests_waiting"},
    {"llamacpp:kv_cache_usage_ratio", NULL, NULL, "kv_cache_usage"},
    {"llamacpp:prompt_tokens_total", NULL, NULL, "prompt_tokens"},
    {"llamacpp:tokens_predicted_total", NULL, NULL, "generation_tokens"},
    {"nv_trt_llm_request_metrics", "request_type", "active", "requests_running"},
    {"nv_trt_llm_request_metrics", "request_type", "waiting", "requests_waiting"},
    {"nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", "fraction", "kv_cache_usage"},
    /* NVIDIA's DCGM exporter (dcgm-exporter's default counters): one series per GPU, labelled gpu, UUID, device,
     * modelName, Hostname. Not summed over an endpoint as the rows above are: sg_srvm_gpu_json keeps each GPU */
    {"DCGM_FI_DEV_GPU_UTIL", NULL, NULL, "gpu_utilization"},
    {"DCGM_FI_DEV_FB_USED", NULL, NULL, "gpu_memory_used"},
    {"DCGM_FI_DEV_FB_FREE", NULL, NULL, "gpu_memory_free"},
    {"DCGM_FI_DEV_POWER_USAGE", NULL, NULL, "gpu_power"},
    {"DCGM_FI_DEV_SM_CLOCK", NULL, NULL, "gpu_sm_clock"},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", NULL, NULL, "gpu_energy"},
    {"DCGM_FI_DEV_GPU_TEMP", NULL, NULL, "gpu_temperature"},
    /* the rest of AIPerf's DCGM fields (its gpu_telemetry/constants.py): memory-copy, encoder, decoder utilisation,
     * the SM-active ratio (a profiling field, not in the default counters) and the last XID error */
    {"DCGM_FI_DEV_MEM_COPY_UTIL", NULL, NULL, "gpu_memory_copy_utilization"},
    {"DCGM_FI_DEV_ENC_UTIL", NULL, NULL, "gpu_encoder_utilization"},
    {"DCGM_FI_DEV_DEC_UTIL", NULL, NULL, "gpu_decoder_utilization"},
    {"DCGM_FI_PROF_SM_ACTIVE", NULL, NULL, "gpu_sm_active"},
    {"DCGM_FI_DEV_XID_ERRORS", NULL, NULL, "gpu_xid_errors"},
};

static const struct {
    const char *known, *unit;
} UNITS[] = {
    {"requests_running", "requests"}, {"requests_waiting", "requests"},   {"kv_cache_usage", "fraction"},
    {"prefix_cache_hits", "tokens"},  {"prefix_cache_queries", "tokens"}, {"prefix_cache_hit_rate", "fraction"},
    {"prompt_tokens", "tokens"},      {"generation_tokens", "tokens"},
};

static const char *unit_of(const char *known)
{
    for (size_t i = 0; i < SG_ARRAY_LEN(UNITS); i++)
        if (strcmp(UNITS[i].known, known) == 0)
            return UNITS[i].unit;
    return "";
}

const char *sg_srvm_known(const char *name, size_t name_len, const char *const *label_kv, size_t n_labels)
{
    for (size_t i = 0; i < SG_ARRAY_LEN(KNOWN); i++) {
        if (strlen(KNOWN[i].metric) != name_len || memcmp(KNOWN[i].metric, name, name_len) != 0)
            continue;
        if (!KNOWN[i].label)
            return KNOWN[i].known;
        for (size_t l = 0; l < n_labels; l++)
            if (strcmp(label_kv[2 * l], KNOWN[i].label) == 0 && strcmp(label_kv[2 * l + 1], KNOWN[i].label_value) == 0)
                return KNOWN[i].known;
    }
    return NULL;
}

typedef struct {
    int64_t t_ns;
    double v;
} sample_t;

typedef struct {
    size_t endpoint;
    char *key; /* endpoint index, name and labels: the series' identity */
    char *name;
    json_t *labels;
    sg_prom_type_t type;
    const char *known;
    sample_t *s;
    size_t n, cap;
} series_t;

typedef struct {
    int64_t t_ns;
    char *error;
} failure_t;

typedef struct {
    char *url;
    uint64_t scrapes, failed;
    failure_t *fail;
    size_t n_fail, cap_fail;
} endpoint_t;

struct sg_srvm {
    double interval_s;
    endpoint_t *ep;
    size_t n_ep;
    series_t *series;
    size_t n_series, cap_series;
    size_t *slots; /* open-addressing index of series by key: series index + 1, 0 empty */
    size_t n_slots;
};

sg_srvm_t *sg_srvm_new(const char *const *urls, size_t n_urls, double interval_s)
{
    sg_srvm_t *m = calloc(1, sizeof *m);
    if (!m || !(m->ep = calloc(n_urls ? n_urls : 1, sizeof *m->ep))) {
        free(m);
        return NULL;
    }
    m->interval_s = interval_s;
    m->n_ep = n_urls;
    for (size_t i = 0; i < n_urls; i++)
        if (!(m->ep[i].url = strdup(urls[i]))) {
            sg_srvm_free(m);
            return NULL;
        }
    return m;
}

void sg_srvm_free(sg_srvm_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_ep; i++) {
        for (size_t k = 0; k < m->ep[i].n_fail; k++)
            free(m->ep[i].fail[k].error);
        free(m->ep[i].fail);
        free(m->ep[i].url);
    }
    for (size_t i = 0; i < m->n_series; i++) {
        free(m->series[i].key);
        free(m->series[i].name);
        json_decref(m->series[i].labels);
        free(m->series[i].s);
    }
    free(m->ep);
    free(m->series);
    free(m->slots);
    free(m);
}

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int rehash(sg_srvm_t *m)
{
    size_t n = m->n_slots ? m->n_slots * 2 : 256;
    size_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->n_series; i++) {
        size_t h = (size_t)hash(m->series[i].key, strlen(m->series[i].key)) & (n - 1);
        while (slots[h])
            h = (h + 1) & (n - 1);
        slots[h] = i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n;
    return 0;
}

/* The series of this key, made on first sight from the sample's name and labels. NULL on OOM. */
static series_t *series_for(sg_srvm_t *m, size_t ep, const char *key, size_t klen, const sg_prom_sample_t *s)
{
    if (m->n_slots) {
        size_t h = (size_t)hash(key, klen) & (m->n_slots - 1);
        for (; m->slots[h]; h = (h + 1) & (m->n_slots - 1)) {
            series_t *x = &m->series[m->slots[h] - 1];
            if (strlen(x->key) == klen && memcmp(x->key, key, klen) == 0)
                return x;
        }
    }
    if ((m->n_series + 1) * 2 > m->n_slots && rehash(m) < 0)
        return NULL;
    if (m->n_series == m->cap_series) {
        size_t cap = m->cap_series ? m->cap_series * 2 : 64;
        series_t *n = realloc(m->series, cap * sizeof *n);
        if (!n)
            return NULL;
        m->series = n;
        m->cap_series = cap;
    }
    series_t *x = &m->series[m->n_series];
    memset(x, 0, sizeof *x);
    x->endpoint = ep;
    x->key = strndup(key, klen);
    x->name = strndup(s->name.base, s->name.len);
    x->labels = json_object();
    x->type = s->type;
    const char *kv[2 * SG_PROM_MAX_LABELS] = {0};
    char *owned[2 * SG_PROM_MAX_LABELS] = {0};
    size_t nl = 0;
    for (size_t l = 0; l < s->n_labels; l++) {
        owned[2 * l] = strndup(s->labels[l].name.base, s->labels[l].name.len);
        owned[2 * l + 1] = strndup(s->labels[l].value.base, s->labels[l].value.len);
        if (owned[2 * l] && owned[2 * l + 1] && x->labels)
            json_object_set_new(x->labels, owned[2 * l], json_stringn(owned[2 * l + 1], strlen(owned[2 * l + 1])));
        kv[2 * l] = owned[2 * l] ? owned[2 * l] : "";
        kv[2 * l + 1] = owned[2 * l + 1] ? owned[2 * l + 1] : "";
        nl++;
    }
    x->known = sg_srvm_known(s->name.base, s->name.len, kv, nl);
    for (size_t l = 0; l < 2 * nl; l++)
        free(owned[l]);
    if (!x->key || !x->name || !x->labels) {
        free(x->key);
        free(x->name);
        json_decref(x->labels);
        return NULL;
    }
    m->n_series++;
    size_t h = (size_t)hash(key, klen) & (m->n_slots - 1);
    while (m->slots[h])
        h = (h + 1) & (m->n_slots - 1);
    m->slots[h] = m->n_series;
    return x;
}

typedef struct {
    sg_srvm_t *m;
    size_t ep;
    int64_t t_ns;
    char key[SG_PROM_MAX_LINE + 512];
} add_ctx_t;

static int on_sample(void *ud, const sg_prom_sample_t *s)
{
    add_ctx_t *c = ud;
    /* the key: endpoint, name, then each label; separated by bytes no name or escaped value holds unescaped */
    size_t k = (size_t)snprintf(c->key, sizeof c->key, "%zu\x1f%.*s", c->ep, (int)s->name.len, s->name.base);
    for (size_t l = 0; l < s->n_labels && k < sizeof c->key; l++)
        k += (size_t)snprintf(c->key + k, sizeof c->key - k, "\x1f%.*s\x1e%.*s", (int)s->labels[l].name.len,
                              s->labels[l].name.base, (int)s->labels[l].value.len, s->labels[l].value.base);
    if (k >= sizeof c->key)
        return 0; /* a series whose identity does not fit is not kept */
    series_t *x = series_for(c->m, c->ep, c->key, k, s);
    if (!x)
        return SG_ENOMEM;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        sample_t *n = realloc(x->s, cap * sizeof *n);
        if (!n)
            return SG_ENOMEM;
        x->s = n;
        x->cap = cap;
    }
    x->s[x->n++] = (sample_t){c->t_ns, s->value};
    return 0;
}

int sg_srvm_add_scrape(sg_srvm_t *m, size_t i, int64_t t_ns, const char *body, size_t len, char *err, size_t errlen)
{
    add_ctx_t *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        sg_srvm_add_failure(m, i, t_ns, err);
        return -1;
    }
    c->m = m;
    c->ep = i;
    c->t_ns = t_ns;
    size_t bad = 0;
    int rc = sg_prom_parse(body, len, on_sample, c, &bad);
    free(c);
    if (rc < 0) {
        if (rc == SG_EPROTO)
            snprintf(err, errlen, "not the Prometheus text format (line %zu)", bad);
        else
            snprintf(err, errlen, "%s", sg_strerror(rc));
        sg_srvm_add_failure(m, i, t_ns, err);
        return -1;
    }
    m->ep[i].scrapes++;
    return 0;
}

void sg_srvm_add_failure(sg_srvm_t *m, size_t i, int64_t t_ns, const char *error)
{
    endpoint_t *e = &m->ep[i];
    e->scrapes++;
    e->failed++;
    if (e->n_fail == e->cap_fail) {
        size_t cap = e->cap_fail ? e->cap_fail * 2 : 8;
        failure_t *n = realloc(e->fail, cap * sizeof *n);
        if (!n)
            return;
        e->fail = n;
        e->cap_fail = cap;
    }
    e->fail[e->n_fail++] = (failure_t){t_ns, strdup(error)};
}

void sg_srvm_counts(const sg_srvm_t *m, size_t i, uint64_t *scrapes, uint64_t *failed)
{
    *scrapes = m->ep[i].scrapes;
    *failed = m->ep[i].failed;
}

size_t sg_srvm_series_count(const sg_srvm_t *m)
{
    return m->n_series;
}

static double secs(int64_t t_ns, int64_t t0_ns)
{
    return (double)(t_ns - t0_ns) / 1e9;
}

static json_t *file_json(const sg_srvm_t *m, int64_t t0_ns)
{
    json_t *root = json_object(), *eps = json_array(), *series = json_array();
    json_object_set_new(root, "interval_seconds", json_real(m->interval_s));
    for (size_t i = 0; i < m->n_ep; i++) {
        const endpoint_t *e = &m->ep[i];
        json_t *o = json_object(), *errs = json_array();
        json_object_set_new(o, "url", json_string(e->url));
        json_object_set_new(o, "scrapes", json_integer((json_int_t)e->scrapes));
        json_object_set_new(o, "failed", json_integer((json_int_t)e->failed));
        for (size_t k = 0; k < e->n_fail; k++) {
            json_t *f = json_object();
            json_object_set_new(f, "time_s", json_real(secs(e->fail[k].t_ns, t0_ns)));
            json_object_set_new(f, "error", json_string(e->fail[k].error ? e->fail[k].error : ""));
            json_array_append_new(errs, f);
        }
        json_object_set_new(o, "errors", errs);
        json_array_append_new(eps, o);
    }
    for (size_t i = 0; i < m->n_series; i++) {
        const series_t *x = &m->series[i];
        json_t *o = json_object(), *smp = json_array();
        json_object_set_new(o, "endpoint", json_string(m->ep[x->endpoint].url));
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set(o, "labels", x->labels);
        json_object_set_new(o, "type", json_string(sg_prom_type_name(x->type)));
        json_object_set_new(o, "known", x->known ? json_string(x->known) : json_null());
        for (size_t k = 0; k < x->n; k++) {
            json_t *p = json_array();
            json_array_append_new(p, json_real(secs(x->s[k].t_ns, t0_ns)));
            /* JSON has no NaN or infinity: those samples keep their time with a null value */
            json_array_append_new(p, isfinite(x->s[k].v) ? json_real(x->s[k].v) : json_null());
            json_array_append_new(smp, p);
        }
        json_object_set_new(o, "samples", smp);
        json_array_append_new(series, o);
    }
    json_object_set_new(root, "endpoints", eps);
    json_object_set_new(root, "series", series);
    return root;
}

static int write_csv(const sg_srvm_t *m, int64_t t0_ns, const char *path)
{
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc < 0)
        return rc;
    fputs("Endpoint,Metric,Labels,Time,Value\n", of.f);
    for (size_t i = 0; i < m->n_series; i++) {
        const series_t *x = &m->series[i];
        char *labels = json_dumps(x->labels, JSON_COMPACT | JSON_SORT_KEYS);
        for (size_t k = 0; k < x->n; k++) {
            sg_csv_quoted(of.f, m->ep[x->endpoint].url);
            fputc(',', of.f);
            sg_csv_quoted(of.f, x->name);
            fputc(',', of.f);
            sg_csv_quoted(of.f, labels ? labels : "{}");
            fprintf(of.f, ",%.6f,%.17g\n", secs(x->s[k].t_ns, t0_ns), x->s[k].v);
        }
        free(labels);
    }
    return sg_outfile_commit(&of);
}

int sg_srvm_write(const sg_srvm_t *m, int64_t t0_ns, const char *json_path, const char *csv_path)
{
    int rc = sg_json_write(json_path, file_json(m, t0_ns)); /* takes the reference */
    if (rc < 0)
        return rc;
    return write_csv(m, t0_ns, csv_path);
}

static int cmp_sample(const void *a, const void *b)
{
    const sample_t *x = a, *y = b;
    return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

/* One known metric of one endpoint: its series' samples in [t0, t1], summed per scrape (several series of one
 * meaning, e.g. one per model, add up). *n: how many scrape times. */
static sample_t *known_samples(const sg_srvm_t *m, size_t ep, const char *known, int64_t t0, int64_t t1, size_t *n,
                               bool *counter, const char **first_name)
{
    size_t total = 0;
    *counter = false;
    *first_name = NULL;
    for (size_t i = 0; i < m->n_series; i++) {
        const series_t *x = &m->series[i];
        if (x->endpoint == ep && x->known && strcmp(x->known, known) == 0) {
            total += x->n;
            *counter = *counter || x->type == SG_PROM_COUNTER;
            *first_name = *first_name ? *first_name : x->name;
        }
    }
    sample_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < m->n_series; i++) {
        const series_t *x = &m->series[i];
        if (x->endpoint != ep || !x->known || strcmp(x->known, known) != 0)
            continue;
        for (size_t j = 0; j < x->n; j++)
            if (x->s[j].t_ns >= t0 && x->s[j].t_ns <= t1 && isfinite(x->s[j].v))
                all[k++] = x->s[j];
    }
    qsort(all, k, sizeof *all, cmp_sample);
    size_t w = 0;
    for (size_t j = 0; j < k; j++) {
        if (w > 0 && all[w - 1].t_ns == all[j].t_ns)
            all[w - 1].v += all[j].v;
        else
            all[w++] = all[j];
    }
    *n = w;
    return all;
}

static json_t *known_summary(const sample_t *s, size_t n, bool counter, const char *unit, const char *name)
{
    json_t *o = json_object();
    json_object_set_new(o, "unit", json_string(unit));
    json_object_set_new(o, "series", json_string(name));
    json_object_set_new(o, "samples", json_integer((json_int_t)n));
    if (counter) {
        double delta = 0; /* increases only: a counter that went down was reset, and counts again from 0 */
        for (size_t i = 1; i < n; i++)
            delta += s[i].v >= s[i - 1].v ? s[i].v - s[i - 1].v : s[i].v;
        double span = n >= 2 ? (double)(s[n - 1].t_ns - s[0].t_ns) / 1e9 : 0;
        json_object_set_new(o, "delta", n >= 2 ? json_real(delta) : json_null());
        json_object_set_new(o, "rate", span > 0 ? json_real(delta / span) : json_null());
        return o;
    }
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        sum += s[i].v;
        lo = s[i].v < lo ? s[i].v : lo;
        hi = s[i].v > hi ? s[i].v : hi;
    }
    json_object_set_new(o, "avg", n ? json_real(sum / (double)n) : json_null());
    json_object_set_new(o, "min", n ? json_real(lo) : json_null());
    json_object_set_new(o, "max", n ? json_real(hi) : json_null());
    json_object_set_new(o, "last", n ? json_real(s[n - 1].v) : json_null());
    return o;
}

char *sg_srvm_summary_json(const sg_srvm_t *m, int64_t t0_ns, int64_t t1_ns)
{
    json_t *root = json_object(), *eps = json_array();
    json_object_set_new(root, "interval_seconds", json_real(m->interval_s));
    for (size_t i = 0; i < m->n_ep; i++) {
        json_t *o = json_object(), *known = json_object();
        json_object_set_new(o, "url", json_string(m->ep[i].url));
        json_object_set_new(o, "scrapes", json_integer((json_int_t)m->ep[i].scrapes));
        json_object_set_new(o, "failed", json_integer((json_int_t)m->ep[i].failed));
        for (size_t u = 0; u < SG_ARRAY_LEN(UNITS); u++) {
            size_t n;
            bool counter;
            const char *name;
            sample_t *s = known_samples(m, i, UNITS[u].known, t0_ns, t1_ns, &n, &counter, &name);
            if (s && name)
                json_object_set_new(known, UNITS[u].known, known_summary(s, n, counter, unit_of(UNITS[u].known), name));
            free(s);
        }
        json_object_set_new(o, "metrics", known);
        json_array_append_new(eps, o);
    }
    json_object_set_new(root, "endpoints", eps);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}

/* ---------- GPU telemetry (DCGM exporter) ---------- */

/* The per-GPU gauges, in the order the summary lists them, with DCGM's units. */
static const struct {
    const char *known, *unit;
} GPU_GAUGES[] = {
    {"gpu_utilization", "%"},
    {"gpu_memory_used", "MiB"},
    {"gpu_memory_free", "MiB"},
    {"gpu_power", "W"},
    {"gpu_sm_clock", "MHz"},
    {"gpu_temperature", "C"},
    {"gpu_memory_copy_utilization", "%"},
    {"gpu_encoder_utilization", "%"},
    {"gpu_decoder_utilization", "%"},
    {"gpu_sm_active", "ratio"},
    {"gpu_xid_errors", "xid"},
};
#define GPU_N_GAUGES SG_ARRAY_LEN(GPU_GAUGES)
#define GPU_POWER 3             /* GPU_GAUGES' power */
#define GPU_ENERGY GPU_N_GAUGES /* the slot after the gauges: the energy counter */

/* One GPU: an endpoint's series that carry the same gpu and UUID labels. */
typedef struct {
    size_t endpoint;
    const char *gpu, *uuid;                     /* label values ("" when absent); borrowed from a series' labels */
    const series_t *first;                      /* a series of it, for the other labels */
    const series_t *by_known[GPU_N_GAUGES + 1]; /* GPU_GAUGES' series, then [GPU_ENERGY] the energy counter */
} gpu_t;

static const char *label(const series_t *x, const char *name)
{
    const char *v = json_string_value(json_object_get(x->labels, name));
    return v ? v : "";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-th percentile of n sorted values, interpolated between the two nearest ranks (numpy's default, which
 * AIPerf's GPU telemetry uses). */
static double pct_linear(const double *v, size_t n, double q)
{
    double pos = q / 100 * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

static const struct {
    const char *key;
    double q;
} GAUGE_PCTS[] = {{"p1", 1},   {"p5", 5},   {"p10", 10}, {"p25", 25}, {"p50", 50},
                  {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}};

/*
 * Gauge statistics of one series: unit, samples, avg, min, max, last; then first, std (the sample's, n - 1; 0 for
 * one sample) and p1 .. p99 (interpolated), which AIPerf's layout of the same gauges needs (export_aiperf.c).
 */
static json_t *gauge_json(const series_t *x, const char *unit)
{
    double sum = 0, lo = INFINITY, hi = -INFINITY, last = NAN, first = NAN;
    double *v = malloc((x->n ? x->n : 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < x->n; i++) {
        double y = x->s[i].v;
        if (!isfinite(y))
            continue;
        sum += y;
        lo = y < lo ? y : lo;
        hi = y > hi ? y : hi;
        last = y;
        if (!n)
            first = y;
        v[n++] = y;
    }
    json_t *o = json_pack("{s:s, s:I, s:o, s:o, s:o, s:o}", "unit", unit, "samples", (json_int_t)n, "avg",
                          n ? json_real(sum / (double)n) : json_null(), "min", n ? json_real(lo) : json_null(), "max",
                          n ? json_real(hi) : json_null(), "last", n ? json_real(last) : json_null());
    if (o && n) {
        double mean = sum / (double)n, ss = 0;
        for (size_t i = 0; i < n; i++)
            ss += (v[i] - mean) * (v[i] - mean);
        json_object_set_new(o, "first", json_real(first));
        json_object_set_new(o, "std", json_real(n > 1 ? sqrt(ss / (double)(n - 1)) : 0));
        qsort(v, n, sizeof *v, cmp_double);
        for (size_t k = 0; k < SG_ARRAY_LEN(GAUGE_PCTS); k++)
            json_object_set_new(o, GAUGE_PCTS[k].key, json_real(pct_linear(v, n, GAUGE_PCTS[k].q)));
    }
    free(v);
    return o;
}

/*
 * Energy over the scraped span (from the scrape just before the load to the one just after it), in J: the
 * energy counter's increase (mJ; a counter that went down was reset and counts again from 0) where the exporter
 * has it, else the power gauge (W) integrated by the trapezoid rule between scrapes. false when neither has two
 * samples.
 */
static bool gpu_energy(const gpu_t *g, double *joules, double *span_s, const char **source)
{
    const series_t *e = g->by_known[GPU_ENERGY], *p = g->by_known[GPU_POWER];
    const series_t *x = e && e->n >= 2 ? e : p && p->n >= 2 ? p : NULL;
    if (!x)
        return false;
    double acc = 0;
    size_t first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (!isfinite(x->s[i].v))
            continue;
        if (first != SIZE_MAX) {
            const sample_t *a = &x->s[last], *b = &x->s[i];
            if (x == e)
                acc += b->v >= a->v ? b->v - a->v : b->v;
            else
                acc += (a->v + b->v) / 2 * (double)(b->t_ns - a->t_ns) / 1e9;
        } else {
            first = i;
        }
        last = i;
    }
    if (first == SIZE_MAX || first == last)
        return false;
    *joules = x == e ? acc / 1e3 : acc;
    *span_s = (double)(x->s[last].t_ns - x->s[first].t_ns) / 1e9;
    *source = x == e ? "energy_counter" : "power_integral";
    return true;
}

char *sg_srvm_gpu_json(const sg_srvm_t *m, uint64_t output_tokens)
{
    gpu_t *gpus = NULL;
    size_t n = 0;
    for (size_t i = 0; i < m->n_series; i++) {
        const series_t *x = &m->series[i];
        if (!x->known || strncmp(x->known, "gpu_", 4) != 0)
            continue;
        const char *gpu = label(x, "gpu"), *uuid = label(x, "UUID");
        size_t k = 0;
        while (k < n &&
               !(gpus[k].endpoint == x->endpoint && strcmp(gpus[k].gpu, gpu) == 0 && strcmp(gpus[k].uuid, uuid) == 0))
            k++;
        if (k == n) {
            gpu_t *ng = realloc(gpus, (n + 1) * sizeof *ng);
            if (!ng) {
                free(gpus);
                return NULL;
            }
            gpus = ng;
            gpus[n++] = (gpu_t){.endpoint = x->endpoint, .gpu = gpu, .uuid = uuid, .first = x};
        }
        size_t slot = GPU_ENERGY;
        for (size_t u = 0; u < GPU_N_GAUGES; u++)
            if (strcmp(GPU_GAUGES[u].known, x->known) == 0)
                slot = u;
        if (!gpus[k].by_known[slot]) /* a second series of one GPU and meaning (other labels): the first counts */
            gpus[k].by_known[slot] = x;
    }
    if (n == 0) {
        free(gpus);
        return NULL;
    }
    json_t *root = json_object(), *arr = json_array();
    double total_j = 0;
    size_t with_energy = 0;
    const char *sources[2] = {NULL, NULL};
    for (size_t k = 0; k < n; k++) {
        const gpu_t *g = &gpus[k];
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:s, s:s}", "endpoint", m->ep[g->endpoint].url, "gpu", g->gpu, "uuid", g->uuid,
                      "model_name", label(g->first, "modelName"), "hostname", label(g->first, "Hostname"));
        for (size_t u = 0; u < SG_ARRAY_LEN(GPU_GAUGES); u++)
            json_object_set_new(o, GPU_GAUGES[u].known,
                                g->by_known[u] ? gauge_json(g->by_known[u], GPU_GAUGES[u].unit) : json_null());
        double j = 0, span = 0;
        const char *src = NULL;
        if (gpu_energy(g, &j, &span, &src)) {
            json_object_set_new(
                o, "energy", json_pack("{s:s, s:f, s:f, s:s}", "unit", "J", "value", j, "span_s", span, "source", src));
            total_j += j;
            with_energy++;
            sources[strcmp(src, "energy_counter") == 0 ? 0 : 1] = src;
        } else {
            json_object_set_new(o, "energy", json_null());
        }
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "source", json_string("dcgm"));
    json_object_set_new(root, "gpu_count", json_integer((json_int_t)n));
    json_object_set_new(root, "gpus", arr);
    /* the whole: every GPU's energy, when every GPU has one */
    bool all = with_energy == n;
    json_object_set_new(root, "energy_j", all ? json_real(total_j) : json_null());
    json_object_set_new(root, "energy_source",
                        !all                       ? json_null()
                        : sources[0] && sources[1] ? json_string("mixed")
                                                   : json_string(sources[0] ? sources[0] : sources[1]));
    json_object_set_new(root, "output_tokens", json_integer((json_int_t)output_tokens));
    json_object_set_new(root, "tokens_per_joule",
                        all && total_j > 0 ? json_real((double)output_tokens / total_j) : json_null());
    free(gpus);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}
