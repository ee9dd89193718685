/*
 * Per-worker aggregation: one sg_record_t in, a handful of histogram records and counters out. The worker owns
 * its sg_metrics_t outright (no atomics, no locks); the controller merges them after the join.
 */
#include "sg_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Beyond an hour a latency is a hang, not a measurement; it is clamped and counted as such. */
#define TIME_MAX_NS (3600ULL * 1000000000ULL)
/* 16 Mi tokens: far past any context window we know of. */
#define TOKENS_MAX (1ULL << 24)
/* 1e9 tokens/s per user (an ITL of 1 ns), in milli-tokens/s: every finite rate a client clock can tell. A whole
 * answer in one read (ITL 0) has no rate at all: it is left out and counted (sg_metrics_per_user_undefined). */
#define MILLI_TPS_MAX 1000000000000ULL

/* Distinct (class, status, message) groups; further distinct messages fold into "(other messages)". */
#define MSG_GROUPS 32
/* Room for the "(other messages)" groups too; the last slot is a catch-all that cannot overflow. */
#define ALL_GROUPS 64
#define OTHER_MESSAGES "(other messages)"
#define OTHER_ERRORS "(other errors)"

struct sg_metrics {
    sg_hist_t *hist[SG_M__COUNT];
    uint64_t ok;
    uint64_t errors;             /* failed: every class but cancelled */
    uint64_t cancelled;          /* cancelled by surge itself (SG_ERRC_CANCELLED): neither ok nor failed */
    sg_hist_t *cancel_wait;      /* each cancelled request's wait: cancellation - intended start, ns */
    uint64_t ramp;               /* measured requests intended inside a ramp, whatever their end */
    uint64_t cancel_tests;       /* cancelled on purpose (--request-cancellation-rate): neither ok nor failed */
    sg_hist_t *cancel_test_time; /* each one's time to cancel: cancellation - last byte sent, ns */
    int64_t last_intended_ns;    /* with first_intended_ns: the sending span of the measured requests */
    uint64_t good;
    uint64_t output_tokens;
    uint64_t input_tokens;
    uint64_t tool_calls, tool_tokens; /* sums over successful requests (tool_tokens: each at most the OSL) */
    uint64_t per_user_undefined;      /* requests of 2+ tokens whose tokens all came at once: ITL 0, no 1/ITL */
    uint64_t osl_source[3];
    sg_len_cmp_t osl_cmp;      /* usage.completion_tokens - tokenizer count */
    sg_len_cmp_t isl_cmp;      /* usage.prompt_tokens - client isl */
    sg_cached_t cached;        /* the requests whose server said how many prompt tokens came from its cache */
    int64_t first_intended_ns; /* INT64_MAX until a request counts */
    int64_t last_end_ns;
    sg_slo_t slos[SG_SLO_MAX];
    sg_slo_tally_t slo_tally[SG_SLO_MAX];
    size_t n_slos;
    size_t n_groups;
    sg_error_group_t groups[ALL_GROUPS];
    /* multi-turn sessions: the same metrics per turn index (made on first use; NULL entries for indices not seen) */
    sg_metrics_t **turns;
    size_t n_turns;
    /* several URLs: the same metrics per URL index (records with multi_url; made on first use) */
    sg_metrics_t *urls[256];
    size_t n_urls;
};

static const struct {
    const char *tag, *name, *label, *unit;
    uint64_t max_value;
} metric_info[SG_M__COUNT] = {
    [SG_M_TTFT] = {"time_to_first_token", "Time to first token", "Time to first token (ms)", "ms", TIME_MAX_NS},
    [SG_M_TTFT_FROM_SEND] = {"time_to_first_token_from_send", "Time to first token from send",
                             "Time to first token from send (ms)", "ms", TIME_MAX_NS},
    [SG_M_TTST] = {"time_to_second_token", "Time to second token", "Time to second token (ms)", "ms", TIME_MAX_NS},
    [SG_M_TTFO] = {"time_to_first_output_token", "Time to first output token", "Time to first output token (ms)", "ms",
                   TIME_MAX_NS},
    [SG_M_ITL] = {"inter_token_latency", "Inter token latency", "Inter token latency (ms)", "ms", TIME_MAX_NS},
    [SG_M_INTER_CHUNK] = {"inter_chunk_latency", "Inter chunk latency", "Inter chunk latency (ms)", "ms", TIME_MAX_NS},
    [SG_M_LATENCY] = {"request_latency", "Request latency", "Request latency (ms)", "ms", TIME_MAX_NS},
    [SG_M_LATENCY_FROM_SEND] = {"request_latency_from_send", "Request latency from send",
                                "Request latency from send (ms)", "ms", TIME_MAX_NS},
    [SG_M_SCHEDULE_LAG] = {"schedule_lag", "Schedule lag", "Schedule lag (ms)", "ms", TIME_MAX_NS},
    [SG_M_OSL] = {"output_sequence_length", "Output sequence length", "Output sequence length (tokens)", "tokens",
                  TOKENS_MAX},
    [SG_M_ISL] = {"input_sequence_length", "Input sequence length", "Input sequence length (tokens)", "tokens",
                  TOKENS_MAX},
    [SG_M_CACHED_ISL] = {"cached_input_tokens", "Cached input tokens", "Cached input tokens (tokens)", "tokens",
                         TOKENS_MAX},
    [SG_M_REASONING] = {"reasoning_token_count", "Reasoning token count", "Reasoning token count (tokens)", "tokens",
                        TOKENS_MAX},
    [SG_M_TOKENS_PER_USER] = {"output_token_throughput_per_user", "Output token throughput per user",
                              "Output token throughput per user (tokens/sec/user)", "tokens/sec/user", MILLI_TPS_MAX},
    [SG_M_HTTP_CONNECTING] = {"http_req_connecting", "HTTP connecting", "HTTP connecting (ms)", "ms", TIME_MAX_NS},
    [SG_M_HTTP_TLS] = {"http_req_tls_handshaking", "HTTP TLS handshaking", "HTTP TLS handshaking (ms)", "ms",
                       TIME_MAX_NS},
    [SG_M_HTTP_SENDING] = {"http_req_sending", "HTTP sending", "HTTP sending (ms)", "ms", TIME_MAX_NS},
    [SG_M_HTTP_WAITING] = {"http_req_waiting", "HTTP waiting (TTFB)", "HTTP waiting (TTFB) (ms)", "ms", TIME_MAX_NS},
    [SG_M_HTTP_RECEIVING] = {"http_req_receiving", "HTTP receiving", "HTTP receiving (ms)", "ms", TIME_MAX_NS},
    [SG_M_HTTP_DURATION] = {"http_req_duration", "HTTP duration", "HTTP duration (ms)", "ms", TIME_MAX_NS},
    [SG_M_TOOL_CALLS] = {"tool_call_count", "Tool calls per response", "Tool calls per response (calls)", "calls",
                         TOKENS_MAX},
    [SG_M_TOOL_TOKENS] = {"tool_call_token_count", "Tool-call token count", "Tool-call token count (tokens)", "tokens",
                          TOKENS_MAX},
    [SG_M_TTFTC] = {"time_to_first_tool_call_token", "Time to first tool-call token",
                    "Time to first tool-call token (ms)", "ms", TIME_MAX_NS},
};

static bool valid_id(sg_metric_id_t id)
{
    return (unsigned)id < SG_M__COUNT;
}

const char *sg_metric_tag(sg_metric_id_t id)
{
    return valid_id(id) ? metric_info[id].tag : "unknown";
}

const char *sg_metric_name(sg_metric_id_t id)
{
    return valid_id(id) ? metric_info[id].name : "unknown";
}

const char *sg_metric_label(sg_metric_id_t id)
{
    return valid_id(id) ? metric_info[id].label : "unknown";
}

const char *sg_metric_unit(sg_metric_id_t id)
{
    return valid_id(id) ? metric_info[id].unit : "";
}

bool sg_metric_streamed_only(sg_metric_id_t id)
{
    switch (id) {
    case SG_M_TTFT:
    case SG_M_TTFT_FROM_SEND:
    case SG_M_TTST:
    case SG_M_TTFO:
    case SG_M_ITL:
    case SG_M_INTER_CHUNK:
    case SG_M_TOKENS_PER_USER:
    case SG_M_TTFTC:
        return true;
    default:
        return false;
    }
}

bool sg_metric_needs_two_tokens(sg_metric_id_t id)
{
    return id == SG_M_TTST || id == SG_M_ITL || id == SG_M_INTER_CHUNK || id == SG_M_TOKENS_PER_USER;
}

bool sg_metric_is_time(sg_metric_id_t id)
{
    return valid_id(id) && (id <= SG_M_SCHEDULE_LAG || sg_metric_is_trace(id) || id == SG_M_TTFTC);
}

bool sg_metric_is_trace(sg_metric_id_t id)
{
    return id >= SG_M_HTTP_CONNECTING && id <= SG_M_HTTP_DURATION;
}

/*
 * The HTTP trace of a successful record (sent, so it has a send start; its response head read): the values of the
 * http_req_* metrics in ns. have[] false for one it lacks (TLS over http://; waiting and receiving without a response
 * byte).
 */
static void trace_values(const sg_record_t *r, double *v, bool *have)
{
    for (int i = SG_M_HTTP_CONNECTING; i <= SG_M_HTTP_DURATION; i++)
        have[i] = false;
    if (!r->send_start_ns)
        return;
    /* AIPerf's http_req_connecting includes the TLS handshake; a reused connection counts 0 in both */
    v[SG_M_HTTP_CONNECTING] = (double)(r->conn_connect_ns + r->conn_tls_ns), have[SG_M_HTTP_CONNECTING] = true;
    v[SG_M_HTTP_TLS] = (double)r->conn_tls_ns, have[SG_M_HTTP_TLS] = r->tls;
    int64_t sent = r->sent_ns > r->send_start_ns ? r->sent_ns : r->send_start_ns;
    v[SG_M_HTTP_SENDING] = (double)(sent - r->send_start_ns), have[SG_M_HTTP_SENDING] = true;
    /* AIPerf's and k6's waiting ends at the first response byte (TTFB), and receiving runs from it to the end */
    if (r->first_byte_ns) {
        v[SG_M_HTTP_WAITING] = (double)(r->first_byte_ns > sent ? r->first_byte_ns - sent : 0);
        v[SG_M_HTTP_RECEIVING] = (double)(r->end_ns > r->first_byte_ns ? r->end_ns - r->first_byte_ns : 0);
        have[SG_M_HTTP_WAITING] = have[SG_M_HTTP_RECEIVING] = true;
    }
    v[SG_M_HTTP_DURATION] = (double)(r->end_ns > r->send_start_ns ? r->end_ns - r->send_start_ns : 0);
    have[SG_M_HTTP_DURATION] = true;
}

double sg_metric_scale(sg_metric_id_t id)
{
    if (sg_metric_is_time(id))
        return 1e-6; /* ns -> ms */
    if (id == SG_M_TOKENS_PER_USER)
        return 1e-3; /* milli-tokens/s -> tokens/s */
    return 1.0;
}

sg_metrics_t *sg_metrics_new(const sg_slo_t *slos, size_t n_slos)
{
    sg_metrics_t *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->first_intended_ns = INT64_MAX;
    m->cancel_wait = sg_hist_new(TIME_MAX_NS);
    m->cancel_test_time = sg_hist_new(TIME_MAX_NS);
    if (!m->cancel_wait || !m->cancel_test_time)
        goto fail;
    for (int i = 0; i < SG_M__COUNT; i++) {
        m->hist[i] = sg_hist_new(metric_info[i].max_value);
        if (!m->hist[i])
            goto fail;
    }
    if (n_slos > SG_SLO_MAX)
        goto fail;
    if (n_slos) {
        memcpy(m->slos, slos, n_slos * sizeof(*slos));
        m->n_slos = n_slos;
    }
    return m;
fail:
    sg_metrics_free(m);
    return NULL;
}

void sg_metrics_free(sg_metrics_t *m)
{
    if (!m)
        return;
    for (int i = 0; i < SG_M__COUNT; i++)
        sg_hist_free(m->hist[i]);
    sg_hist_free(m->cancel_wait);
    sg_hist_free(m->cancel_test_time);
    for (size_t i = 0; i < m->n_turns; i++)
        sg_metrics_free(m->turns[i]);
    free(m->turns);
    for (size_t i = 0; i < m->n_urls; i++)
        sg_metrics_free(m->urls[i]);
    free(m);
}

/* The metrics of turn index i, made (with every index below it) on first use; NULL when out of memory. */
static sg_metrics_t *turn_metrics(sg_metrics_t *m, uint32_t i)
{
    if (i >= SG_METRICS_TURNS_MAX)
        i = SG_METRICS_TURNS_MAX - 1;
    if (i >= m->n_turns) {
        sg_metrics_t **nt = realloc(m->turns, (i + 1) * sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t k = m->n_turns; k <= i; k++)
            nt[k] = NULL;
        m->turns = nt;
        m->n_turns = i + 1;
    }
    if (!m->turns[i])
        m->turns[i] = sg_metrics_new(NULL, 0);
    return m->turns[i];
}

/* The metrics of URL index i, made on first use; NULL when out of memory. */
static sg_metrics_t *url_metrics(sg_metrics_t *m, uint8_t i)
{
    if (!m->urls[i])
        m->urls[i] = sg_metrics_new(NULL, 0);
    if (m->urls[i] && i >= m->n_urls)
        m->n_urls = (size_t)i + 1;
    return m->urls[i];
}

size_t sg_metrics_urls(const sg_metrics_t *m)
{
    return m->n_urls;
}

const sg_metrics_t *sg_metrics_url(const sg_metrics_t *m, size_t i)
{
    return i < m->n_urls ? m->urls[i] : NULL;
}

size_t sg_metrics_turns(const sg_metrics_t *m)
{
    return m->n_turns;
}

const sg_metrics_t *sg_metrics_turn(const sg_metrics_t *m, size_t i)
{
    return i < m->n_turns ? m->turns[i] : NULL;
}

size_t sg_metrics_bytes(const sg_metrics_t *m)
{
    size_t n = sizeof(*m);
    for (int i = 0; i < SG_M__COUNT; i++)
        n += sg_hist_bytes(m->hist[i]);
    return n + sg_hist_bytes(m->cancel_wait) + sg_hist_bytes(m->cancel_test_time);
}

static sg_error_group_t *find_group(sg_metrics_t *m, sg_err_class_t cls, int32_t status, const char *msg)
{
    for (size_t i = 0; i < m->n_groups; i++) {
        sg_error_group_t *g = &m->groups[i];
        if (g->cls == cls && g->http_status == status && strcmp(g->message, msg) == 0)
            return g;
    }
    return NULL;
}

static sg_error_group_t *new_group(sg_metrics_t *m, sg_err_class_t cls, int32_t status, const char *msg)
{
    sg_error_group_t *g = &m->groups[m->n_groups++];
    g->cls = cls;
    g->http_status = status;
    /* The record's message is NUL-terminated within SG_RECORD_MSG, but a merge source could be anything. */
    size_t len = strnlen(msg, sizeof(g->message) - 1);
    memcpy(g->message, msg, len);
    g->message[len] = '\0';
    g->count = 0;
    return g;
}

/* Error path only: a linear scan over at most ALL_GROUPS entries is fine. */
static void count_error(sg_metrics_t *m, sg_err_class_t cls, int32_t status, const char *msg, uint64_t n)
{
    sg_error_group_t *g = find_group(m, cls, status, msg);
    if (!g && m->n_groups < MSG_GROUPS)
        g = new_group(m, cls, status, msg);
    if (!g)
        g = find_group(m, cls, status, OTHER_MESSAGES);
    if (!g && m->n_groups < ALL_GROUPS - 1)
        g = new_group(m, cls, status, OTHER_MESSAGES);
    if (!g) {
        /* More than 30 overflowing class+status pairs: keep the total right, say the detail is gone. */
        g = m->n_groups < ALL_GROUPS ? new_group(m, cls, 0, OTHER_ERRORS) : &m->groups[ALL_GROUPS - 1];
    }
    g->count += n;
}

static void cmp_add(sg_len_cmp_t *c, int64_t server, int64_t client)
{
    int64_t d = server - client;
    uint64_t a = d < 0 ? (uint64_t)-d : (uint64_t)d;
    if (c->compared == 0 || d < c->min_diff)
        c->min_diff = d;
    if (c->compared == 0 || d > c->max_diff)
        c->max_diff = d;
    c->compared++;
    c->differ += d != 0;
    c->sum_diff += d;
    c->sum_abs_diff += a;
    if (a > c->max_abs_diff)
        c->max_abs_diff = a;
}

static void cmp_merge(sg_len_cmp_t *dst, const sg_len_cmp_t *src)
{
    if (!src->compared)
        return;
    if (dst->compared == 0 || src->min_diff < dst->min_diff)
        dst->min_diff = src->min_diff;
    if (dst->compared == 0 || src->max_diff > dst->max_diff)
        dst->max_diff = src->max_diff;
    dst->compared += src->compared;
    dst->differ += src->differ;
    dst->sum_diff += src->sum_diff;
    dst->sum_abs_diff += src->sum_abs_diff;
    if (src->max_abs_diff > dst->max_abs_diff)
        dst->max_abs_diff = src->max_abs_diff;
}

static uint64_t nonneg(int64_t d)
{
    return d > 0 ? (uint64_t)d : 0;
}

/* vLLM's and AIPerf's spellings beside our tags */
static const struct {
    const char *name;
    sg_metric_id_t id;
} metric_aliases[] = {
    {"ttft", SG_M_TTFT}, {"tpot", SG_M_ITL}, {"itl", SG_M_ITL}, {"e2el", SG_M_LATENCY}, {"ttfo", SG_M_TTFO},
};

bool sg_metric_slo_ok(sg_metric_id_t id)
{
    return valid_id(id) && id != SG_M_OSL && id != SG_M_ISL && id != SG_M_CACHED_ISL && id != SG_M_REASONING &&
           id != SG_M_TOOL_CALLS && id != SG_M_TOOL_TOKENS;
}

int sg_metric_find(const char *name, size_t len, sg_metric_id_t *out)
{
    for (size_t i = 0; i < SG_ARRAY_LEN(metric_aliases); i++)
        if (strlen(metric_aliases[i].name) == len && memcmp(metric_aliases[i].name, name, len) == 0) {
            *out = metric_aliases[i].id;
            return 0;
        }
    for (int id = 0; id < SG_M__COUNT; id++) {
        const char *tag = sg_metric_tag((sg_metric_id_t)id);
        if (tag && strlen(tag) == len && memcmp(tag, name, len) == 0 && sg_metric_slo_ok((sg_metric_id_t)id)) {
            *out = (sg_metric_id_t)id;
            return 0;
        }
    }
    return -1;
}

bool sg_metric_larger_is_better(sg_metric_id_t id)
{
    return id == SG_M_TOKENS_PER_USER;
}

/*
 * A request is good when it meets every SLO. The values compared are the exact per-request ones (ns, tokens,
 * tokens/s), not the bucketed ones. Every SLO is tallied, not only up to the first miss, so that the summary can
 * say which constraint cost the goodput. A metric the request does not have (no TTFT when no content came, no ITL
 * with one token) is tallied as not measurable and the request is not good: goodput counts requests shown to meet
 * every SLO (AIPerf's rule; vLLM instead takes a one-token request's TPOT as 0, see docs/metrics.md).
 */
static bool tally_slos(sg_metrics_t *m, const double *value, const bool *have)
{
    bool good = true;
    for (size_t i = 0; i < m->n_slos; i++) {
        sg_metric_id_t id = m->slos[i].metric;
        double t = m->slos[i].threshold;
        sg_slo_tally_t *c = &m->slo_tally[i];
        if (!valid_id(id) || !have[id]) {
            c->not_measurable++;
            good = false;
            continue;
        }
        bool met;
        if (sg_metric_larger_is_better(id))
            met = value[id] >= t;
        else if (sg_metric_is_time(id))
            met = value[id] <= t * 1e6;
        else
            met = value[id] <= t;
        if (met) {
            c->met++;
        } else {
            c->missed++;
            good = false;
        }
    }
    return good;
}

bool sg_record_metric(const sg_record_t *r, sg_metric_id_t id, double *value)
{
    if (r->err_class != SG_ERRC_NONE)
        return false;
    bool first = r->first_token_ns != 0, sent = r->sent_ns != 0;
    switch (id) {
    case SG_M_LATENCY:
        *value = (double)nonneg(r->end_ns - r->intended_ns);
        return true;
    case SG_M_LATENCY_FROM_SEND:
        *value = (double)nonneg(r->end_ns - r->sent_ns);
        return sent;
    case SG_M_SCHEDULE_LAG:
        *value = (double)nonneg(r->sent_ns - r->intended_ns);
        return sent;
    case SG_M_OSL:
        *value = r->osl;
        return !r->no_output;
    case SG_M_REASONING:
        *value = r->reasoning_tokens;
        return r->reasoning_tokens > 0;
    case SG_M_TTFO:
        *value = (double)nonneg(r->first_output_ns - r->intended_ns);
        return r->first_output_ns != 0;
    case SG_M_TOOL_CALLS:
        *value = r->tool_calls;
        return r->tool_calls > 0;
    case SG_M_TOOL_TOKENS:
        *value = r->tool_tokens;
        return r->tool_calls > 0 && r->tool_tokens > 0;
    case SG_M_TTFTC:
        *value = (double)nonneg(r->first_tool_ns - r->intended_ns);
        return r->first_tool_ns != 0;
    case SG_M_ISL:
        *value = r->isl;
        return true;
    case SG_M_CACHED_ISL:
        *value = r->isl_cached;
        return r->isl_cached >= 0;
    case SG_M_TTFT:
        *value = (double)nonneg(r->first_token_ns - r->intended_ns);
        return first;
    case SG_M_TTFT_FROM_SEND:
        *value = (double)nonneg(r->first_token_ns - r->sent_ns);
        return first && sent;
    case SG_M_TTST:
        *value = (double)nonneg(r->second_token_ns - r->first_token_ns);
        return first && r->second_token_ns;
    case SG_M_ITL:
    case SG_M_TOKENS_PER_USER: {
        if (!first || r->osl < 2)
            return false;
        double itl = (double)nonneg(r->end_ns - r->first_token_ns) / (double)(r->osl - 1);
        if (id == SG_M_TOKENS_PER_USER && itl <= 0)
            return false; /* every token at once: 1/ITL is undefined (AIPerf leaves the request out too) */
        *value = id == SG_M_ITL ? itl : 1e9 / itl;
        return true;
    }
    case SG_M_HTTP_CONNECTING:
    case SG_M_HTTP_TLS:
    case SG_M_HTTP_SENDING:
    case SG_M_HTTP_WAITING:
    case SG_M_HTTP_RECEIVING:
    case SG_M_HTTP_DURATION: {
        double v[SG_M__COUNT];
        bool have[SG_M__COUNT];
        trace_values(r, v, have);
        *value = v[id];
        return have[id];
    }
    case SG_M_INTER_CHUNK: {
        if (!first || r->n_events < 2 || !r->event_us)
            return false;
        uint32_t worst = 0;
        for (uint32_t i = 1; i < r->n_events; i++) {
            uint32_t a = r->event_us[i - 1], b = r->event_us[i];
            worst = b > a && b - a > worst ? b - a : worst;
        }
        *value = (double)worst * 1000.0;
        return true;
    }
    default:
        return false;
    }
}

static void add_one(sg_metrics_t *m, const sg_record_t *r);

void sg_metrics_add(sg_metrics_t *m, const sg_record_t *r)
{
    if (r->warmup)
        return;
    m->ramp += r->ramp;
    add_one(m, r);
    if (SG_UNLIKELY(r->in_session)) {
        sg_metrics_t *t = turn_metrics(m, r->turn);
        if (t)
            add_one(t, r);
    }
    if (SG_UNLIKELY(r->multi_url)) {
        sg_metrics_t *u = url_metrics(m, r->url);
        if (u)
            add_one(u, r);
    }
}

static void add_one(sg_metrics_t *m, const sg_record_t *r)
{
    if (r->intended_ns && r->intended_ns < m->first_intended_ns)
        m->first_intended_ns = r->intended_ns;
    if (r->end_ns > m->last_end_ns)
        m->last_end_ns = r->end_ns;
    if (r->intended_ns > m->last_intended_ns)
        m->last_intended_ns = r->intended_ns;

    if (r->err_class == SG_ERRC_CANCEL_TEST) {
        /* the test cancelled it on purpose: not the server's failure, not a censored latency; its time to cancel
         * (from the last byte sent) is kept, and its schedule lag */
        m->cancel_tests++;
        if (r->sent_ns) {
            sg_hist_record(m->cancel_test_time, nonneg(r->end_ns - r->sent_ns));
            sg_hist_record(m->hist[SG_M_SCHEDULE_LAG], nonneg(r->sent_ns - r->intended_ns));
        }
        return;
    }
    if (r->err_class == SG_ERRC_CANCELLED) {
        /* surge stopped it, not the server: a right-censored observation (its latency is at least this wait),
         * counted apart from failures and kept out of the distributions (docs/metrics.md, Cancelled requests) */
        m->cancelled++;
        sg_hist_record(m->cancel_wait, nonneg(r->end_ns - r->intended_ns));
        if (r->sent_ns)
            sg_hist_record(m->hist[SG_M_SCHEDULE_LAG], nonneg(r->sent_ns - r->intended_ns));
        return;
    }
    if (r->err_class != SG_ERRC_NONE) {
        m->errors++;
        /* The schedule's error does not depend on how the request ended. */
        if (r->sent_ns)
            sg_hist_record(m->hist[SG_M_SCHEDULE_LAG], nonneg(r->sent_ns - r->intended_ns));
        count_error(m, (sg_err_class_t)r->err_class, r->http_status, r->err_msg, 1);
        return;
    }

    /* value[] in ns for times, tokens for lengths, tokens/s for the per-user rate: what the SLOs compare. */
    double value[SG_M__COUNT] = {0};
    bool have[SG_M__COUNT] = {0};
    m->ok++;

    uint64_t latency = nonneg(r->end_ns - r->intended_ns);
    sg_hist_record(m->hist[SG_M_LATENCY], latency);
    value[SG_M_LATENCY] = (double)latency, have[SG_M_LATENCY] = true;
    if (r->sent_ns) {
        uint64_t from_send = nonneg(r->end_ns - r->sent_ns), lag = nonneg(r->sent_ns - r->intended_ns);
        sg_hist_record(m->hist[SG_M_LATENCY_FROM_SEND], from_send);
        sg_hist_record(m->hist[SG_M_SCHEDULE_LAG], lag);
        value[SG_M_LATENCY_FROM_SEND] = (double)from_send, have[SG_M_LATENCY_FROM_SEND] = true;
        value[SG_M_SCHEDULE_LAG] = (double)lag, have[SG_M_SCHEDULE_LAG] = true;
    }
    sg_hist_record(m->hist[SG_M_ISL], r->isl);
    value[SG_M_ISL] = r->isl, have[SG_M_ISL] = true;
    m->input_tokens += r->isl;
    if (r->isl_cached >= 0) {
        sg_hist_record(m->hist[SG_M_CACHED_ISL], (uint64_t)r->isl_cached);
        value[SG_M_CACHED_ISL] = r->isl_cached, have[SG_M_CACHED_ISL] = true;
        m->cached.requests++;
        m->cached.cached += (uint64_t)r->isl_cached;
        m->cached.prompt += r->isl_server >= 0 ? (uint64_t)r->isl_server : r->isl;
    }
    if (!r->no_output) {
        sg_hist_record(m->hist[SG_M_OSL], r->osl);
        value[SG_M_OSL] = r->osl, have[SG_M_OSL] = true;
        m->output_tokens += r->osl;
        if (r->osl_source < SG_ARRAY_LEN(m->osl_source))
            m->osl_source[r->osl_source]++;
    }
    if (r->reasoning_tokens > 0) {
        sg_hist_record(m->hist[SG_M_REASONING], r->reasoning_tokens);
        value[SG_M_REASONING] = r->reasoning_tokens, have[SG_M_REASONING] = true;
    }
    if (SG_UNLIKELY(r->tool_calls)) {
        sg_hist_record(m->hist[SG_M_TOOL_CALLS], r->tool_calls);
        value[SG_M_TOOL_CALLS] = r->tool_calls, have[SG_M_TOOL_CALLS] = true;
        m->tool_calls += r->tool_calls;
        if (r->tool_tokens) { /* 0: not counted (a whole response with text beside its calls, no tokenizer) */
            sg_hist_record(m->hist[SG_M_TOOL_TOKENS], r->tool_tokens);
            value[SG_M_TOOL_TOKENS] = r->tool_tokens, have[SG_M_TOOL_TOKENS] = true;
            /* their share of the output: a tokenizer's count of the arguments can pass a server's usage (which then
             * undercounts); a response's arguments are never more than its output */
            m->tool_tokens += r->no_output || r->tool_tokens < r->osl ? r->tool_tokens : r->osl;
        }
    }
    if (SG_UNLIKELY(r->first_tool_ns)) {
        uint64_t ttftc = nonneg(r->first_tool_ns - r->intended_ns);
        sg_hist_record(m->hist[SG_M_TTFTC], ttftc);
        value[SG_M_TTFTC] = (double)ttftc, have[SG_M_TTFTC] = true;
    }
    if (r->first_output_ns) {
        uint64_t ttfo = nonneg(r->first_output_ns - r->intended_ns);
        sg_hist_record(m->hist[SG_M_TTFO], ttfo);
        value[SG_M_TTFO] = (double)ttfo, have[SG_M_TTFO] = true;
    }
    if (r->osl_server >= 0 && r->osl_tokenizer >= 0)
        cmp_add(&m->osl_cmp, r->osl_server, r->osl_tokenizer);
    if (r->isl_server >= 0)
        cmp_add(&m->isl_cmp, r->isl_server, r->isl);

    if (r->first_token_ns) {
        uint64_t ttft = nonneg(r->first_token_ns - r->intended_ns);
        sg_hist_record(m->hist[SG_M_TTFT], ttft);
        value[SG_M_TTFT] = (double)ttft, have[SG_M_TTFT] = true;
        if (r->sent_ns) {
            uint64_t ttft_send = nonneg(r->first_token_ns - r->sent_ns);
            sg_hist_record(m->hist[SG_M_TTFT_FROM_SEND], ttft_send);
            value[SG_M_TTFT_FROM_SEND] = (double)ttft_send, have[SG_M_TTFT_FROM_SEND] = true;
        }
        if (r->second_token_ns) {
            uint64_t ttst = nonneg(r->second_token_ns - r->first_token_ns);
            sg_hist_record(m->hist[SG_M_TTST], ttst);
            value[SG_M_TTST] = (double)ttst, have[SG_M_TTST] = true;
        }
        if (r->osl >= 2) {
            /* (latency - ttft) / (osl - 1): GenAI-Perf's, AIPerf's and vLLM's TPOT definition. */
            double itl = (double)nonneg(r->end_ns - r->first_token_ns) / (double)(r->osl - 1);
            sg_hist_record(m->hist[SG_M_ITL], (uint64_t)(itl + 0.5));
            value[SG_M_ITL] = itl, have[SG_M_ITL] = true;
            /* 1/ITL, AIPerf's output_token_throughput_per_user; undefined when every token came at once (the
             * last read carried them all: latency == TTFT), and then left out, as AIPerf does, and counted */
            if (itl > 0) {
                double tps = 1e9 / itl;
                double milli = tps * 1e3;
                sg_hist_record(m->hist[SG_M_TOKENS_PER_USER],
                               milli > (double)MILLI_TPS_MAX ? MILLI_TPS_MAX + 1 : (uint64_t)(milli + 0.5));
                value[SG_M_TOKENS_PER_USER] = tps, have[SG_M_TOKENS_PER_USER] = true;
            } else {
                m->per_user_undefined++;
            }
        }
        if (r->n_events >= 2 && r->event_us) {
            uint32_t worst = 0;
            for (uint32_t i = 1; i < r->n_events; i++) {
                uint32_t a = r->event_us[i - 1], b = r->event_us[i];
                uint32_t gap = b > a ? b - a : 0;
                worst = gap > worst ? gap : worst;
                sg_hist_record(m->hist[SG_M_INTER_CHUNK], (uint64_t)gap * 1000u);
            }
            /* An inter-chunk SLO holds when every gap does, i.e. the largest. */
            value[SG_M_INTER_CHUNK] = (double)worst * 1000.0, have[SG_M_INTER_CHUNK] = true;
        }
    }

    trace_values(r, value, have);
    for (int i = SG_M_HTTP_CONNECTING; i <= SG_M_HTTP_DURATION; i++)
        if (have[i])
            sg_hist_record(m->hist[i], (uint64_t)value[i]);

    if (tally_slos(m, value, have))
        m->good++;
}

int sg_metrics_merge(sg_metrics_t *dst, const sg_metrics_t *src)
{
    for (int i = 0; i < SG_M__COUNT; i++) {
        int rc = sg_hist_merge(dst->hist[i], src->hist[i]);
        if (rc < 0)
            return rc;
    }
    int hrc = sg_hist_merge(dst->cancel_wait, src->cancel_wait);
    if (hrc < 0)
        return hrc;
    hrc = sg_hist_merge(dst->cancel_test_time, src->cancel_test_time);
    if (hrc < 0)
        return hrc;
    dst->cancel_tests += src->cancel_tests;
    dst->ramp += src->ramp;
    dst->ok += src->ok;
    dst->errors += src->errors;
    dst->cancelled += src->cancelled;
    if (src->last_intended_ns > dst->last_intended_ns)
        dst->last_intended_ns = src->last_intended_ns;
    dst->good += src->good;
    dst->output_tokens += src->output_tokens;
    dst->input_tokens += src->input_tokens;
    dst->tool_calls += src->tool_calls;
    dst->tool_tokens += src->tool_tokens;
    dst->per_user_undefined += src->per_user_undefined;
    /* The workers' metrics were made with the run's SLOs, in the same order. */
    for (size_t i = 0; i < dst->n_slos && i < src->n_slos; i++) {
        dst->slo_tally[i].met += src->slo_tally[i].met;
        dst->slo_tally[i].missed += src->slo_tally[i].missed;
        dst->slo_tally[i].not_measurable += src->slo_tally[i].not_measurable;
    }
    for (size_t i = 0; i < SG_ARRAY_LEN(dst->osl_source); i++)
        dst->osl_source[i] += src->osl_source[i];
    cmp_merge(&dst->osl_cmp, &src->osl_cmp);
    cmp_merge(&dst->isl_cmp, &src->isl_cmp);
    dst->cached.requests += src->cached.requests;
    dst->cached.cached += src->cached.cached;
    dst->cached.prompt += src->cached.prompt;
    if (src->first_intended_ns < dst->first_intended_ns)
        dst->first_intended_ns = src->first_intended_ns;
    if (src->last_end_ns > dst->last_end_ns)
        dst->last_end_ns = src->last_end_ns;
    for (size_t i = 0; i < src->n_groups; i++) {
        const sg_error_group_t *g = &src->groups[i];
        count_error(dst, g->cls, g->http_status, g->message, g->count);
    }
    for (size_t i = 0; i < src->n_turns; i++) {
        if (!src->turns[i])
            continue;
        sg_metrics_t *t = turn_metrics(dst, (uint32_t)i);
        int rc = t ? sg_metrics_merge(t, src->turns[i]) : SG_ENOMEM;
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < src->n_urls; i++) {
        if (!src->urls[i])
            continue;
        sg_metrics_t *u = url_metrics(dst, (uint8_t)i);
        int rc = u ? sg_metrics_merge(u, src->urls[i]) : SG_ENOMEM;
        if (rc < 0)
            return rc;
    }
    return 0;
}

const sg_hist_t *sg_metrics_hist(const sg_metrics_t *m, sg_metric_id_t id)
{
    return valid_id(id) ? m->hist[id] : NULL;
}

uint64_t sg_metrics_ok(const sg_metrics_t *m)
{
    return m->ok;
}

uint64_t sg_metrics_errors(const sg_metrics_t *m)
{
    return m->errors;
}

uint64_t sg_metrics_cancelled(const sg_metrics_t *m)
{
    return m->cancelled;
}

uint64_t sg_metrics_ramp(const sg_metrics_t *m)
{
    return m->ramp;
}

uint64_t sg_metrics_cancel_tests(const sg_metrics_t *m)
{
    return m->cancel_tests;
}

const sg_hist_t *sg_metrics_cancel_test_time(const sg_metrics_t *m)
{
    return m->cancel_test_time;
}

const sg_hist_t *sg_metrics_cancel_wait(const sg_metrics_t *m)
{
    return m->cancel_wait;
}

double sg_metrics_offered_rate(const sg_metrics_t *m)
{
    uint64_t n = m->ok + m->errors + m->cancelled;
    if (n < 2 || m->first_intended_ns == INT64_MAX || m->last_intended_ns <= m->first_intended_ns)
        return 0.0;
    return (double)(n - 1) / ((double)(m->last_intended_ns - m->first_intended_ns) / 1e9);
}

double sg_metrics_latency_at_least(const sg_metrics_t *m, double p)
{
    const sg_hist_t *lat = m->hist[SG_M_LATENCY];
    if (m->cancelled == 0)
        return sg_hist_percentile(lat, p);
    sg_hist_t *both = sg_hist_new(TIME_MAX_NS);
    if (!both)
        return NAN;
    double v = NAN;
    if (sg_hist_merge(both, lat) == 0 && sg_hist_merge(both, m->cancel_wait) == 0)
        v = sg_hist_percentile(both, p);
    sg_hist_free(both);
    return v;
}

uint64_t sg_metrics_good(const sg_metrics_t *m)
{
    return m->good;
}

uint64_t sg_metrics_output_tokens(const sg_metrics_t *m)
{
    return m->output_tokens;
}

uint64_t sg_metrics_input_tokens(const sg_metrics_t *m)
{
    return m->input_tokens;
}

uint64_t sg_metrics_tool_calls(const sg_metrics_t *m)
{
    return m->tool_calls;
}

uint64_t sg_metrics_tool_tokens(const sg_metrics_t *m)
{
    return m->tool_tokens;
}

uint64_t sg_metrics_per_user_undefined(const sg_metrics_t *m)
{
    return m->per_user_undefined;
}

uint64_t sg_metric_range_max(sg_metric_id_t id)
{
    return valid_id(id) ? metric_info[id].max_value : 0;
}

size_t sg_metrics_slo_tallies(const sg_metrics_t *m, const sg_slo_t **slos, const sg_slo_tally_t **tallies)
{
    *slos = m->slos;
    *tallies = m->slo_tally;
    return m->n_slos;
}

uint64_t sg_metrics_osl_source_count(const sg_metrics_t *m, sg_osl_source_t s)
{
    return (unsigned)s < SG_ARRAY_LEN(m->osl_source) ? m->osl_source[s] : 0;
}

void sg_metrics_osl_cmp(const sg_metrics_t *m, sg_len_cmp_t *out)
{
    *out = m->osl_cmp;
}

void sg_metrics_cached(const sg_metrics_t *m, sg_cached_t *out)
{
    *out = m->cached;
}

void sg_metrics_isl_cmp(const sg_metrics_t *m, sg_len_cmp_t *out)
{
    *out = m->isl_cmp;
}

int64_t sg_metrics_first_intended_ns(const sg_metrics_t *m)
{
    return m->first_intended_ns == INT64_MAX ? 0 : m->first_intended_ns;
}

int64_t sg_metrics_last_end_ns(const sg_metrics_t *m)
{
    return m->last_end_ns;
}

size_t sg_metrics_error_groups(const sg_metrics_t *m, const sg_error_group_t **groups)
{
    *groups = m->groups;
    return m->n_groups;
}

double sg_metrics_duration_s(const sg_metrics_t *m)
{
    int64_t first = sg_metrics_first_intended_ns(m), last = m->last_end_ns;
    if (first == 0 || last <= first)
        return 0.0;
    return (double)(last - first) / 1e9;
}
