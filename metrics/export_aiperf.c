/*
 * The files AIPerf's readers know, next to surge's own: `aiperf plot`, llm-d-benchmark's AIPerf importer and
 * scripts written against AIPerf find a surge run where they find an AIPerf run.
 *
 *   profile_export.jsonl        one MetricRecordInfo per measured request (sg_aiperf_record_line, called by the
 *                               record-log merge in reclog.c in the same pass as surge's own JSONL)
 *   profile_export_aiperf.json  JsonExportData: metric blocks keyed by AIPerf's tags, input_config in AIPerf's
 *                               UserConfig shape, error_summary as ErrorDetailsCount, start/end time
 *   profile_export_aiperf.csv   AIPerf's CSV: the distributions, a blank line, then the single values
 *
 * The schema is AIPerf's (src/aiperf/common/models/record_models.py, export_models.py, error_models.py,
 * metric_records_wire.py; src/aiperf/exporters/csv_exporter.py); the values are surge's, with surge's definitions
 * (latencies from the intended start: docs/metrics.md). So request_start_ns is the intended start, which keeps
 * AIPerf's identities request_latency = request_end_ns - request_start_ns and TTFT = first token - request_start_ns
 * true for a reader that recomputes them. docs/files.md says what each field holds.
 *
 * Main thread, after the run.
 */
#include "sg_export_util.h"
#include "sg_metrics.h"
#include "sg_numfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------- per request: profile_export.jsonl ---------- */

/* Everything in a line but the inter-chunk list: keys, a dozen numbers, the escaped error message. */
#define AIPERF_LINE_FIXED_MAX (3072 + SG_JSON_ESCAPED_MAX(SG_RECORD_MSG))
/* One inter-chunk gap: a comma and a fixed-point number of ms. */
#define GAP_MAX 24
#define GAPS_PER_ROOM 1024

static int64_t wall(int64_t mono_ns, int64_t wall_offset_ns)
{
    return mono_ns + wall_offset_ns;
}

/* ,"tag":{"value":V,"unit":"U"} with V an integer */
static char *metric_int(char *p, const char *tag, int64_t v, const char *unit)
{
    size_t tl = strlen(tag), ul = strlen(unit);
    SG_PUT_LIT(p, ",\"");
    memcpy(p, tag, tl);
    p += tl;
    SG_PUT_LIT(p, "\":{\"value\":");
    p = sg_put_i64(p, v);
    SG_PUT_LIT(p, ",\"unit\":\"");
    memcpy(p, unit, ul);
    p += ul;
    SG_PUT_LIT(p, "\"}");
    return p;
}

/* ,"tag":{"value":V,"unit":"U"} with V = micro / 10^6, six decimals: exact for ns shown in ms */
static char *metric_micro(char *p, const char *tag, int64_t micro, const char *unit)
{
    size_t tl = strlen(tag), ul = strlen(unit);
    SG_PUT_LIT(p, ",\"");
    memcpy(p, tag, tl);
    p += tl;
    SG_PUT_LIT(p, "\":{\"value\":");
    p = sg_put_fixed(p, micro, 6, 1000000);
    SG_PUT_LIT(p, ",\"unit\":\"");
    memcpy(p, unit, ul);
    p += ul;
    SG_PUT_LIT(p, "\"}");
    return p;
}

/* A time metric of r in ms, when r has it (sg_record_metric decides, as it does for the summary). */
static char *metric_ms(char *p, const sg_record_t *r, sg_metric_id_t id)
{
    double ns;
    if (!sg_record_metric(r, id, &ns))
        return p;
    return metric_micro(p, sg_metric_tag(id), llround(ns), "ms");
}

static char *metadata(char *p, const sg_record_t *r, int64_t off)
{
    int64_t end = r->end_ns ? r->end_ns : r->sent_ns ? r->sent_ns : r->intended_ns;
    bool cancelled = r->err_class == SG_ERRC_CANCELLED || r->err_class == SG_ERRC_CANCEL_TEST;
    SG_PUT_LIT(p, "{\"metadata\":{\"session_num\":");
    p = sg_put_u64(p, r->id);
    /* surge sends no X-Request-ID; a session's turns carry X-Correlation-ID: the session's id. The payload index
     * finds the body in inputs.json. */
    SG_PUT_LIT(p, ",\"x_request_id\":null,\"x_correlation_id\":");
    if (r->in_session) {
        SG_PUT_LIT(p, "\"");
        p = sg_put_u64(p, r->session);
        SG_PUT_LIT(p, "\"");
    } else {
        SG_PUT_LIT(p, "null");
    }
    SG_PUT_LIT(p, ",\"conversation_id\":\"");
    p = sg_put_u64(p, r->payload);
    SG_PUT_LIT(p, "\",\"turn_index\":");
    p = sg_put_u64(p, r->in_session ? r->turn : 0);
    SG_PUT_LIT(p, ",\"request_start_ns\":");
    p = sg_put_i64(p, wall(r->intended_ns, off));
    SG_PUT_LIT(p, ",\"request_ack_ns\":");
    if (r->first_byte_ns)
        p = sg_put_i64(p, wall(r->first_byte_ns, off));
    else
        SG_PUT_LIT(p, "null");
    SG_PUT_LIT(p, ",\"request_end_ns\":");
    p = sg_put_i64(p, wall(end, off));
    SG_PUT_LIT(p, ",\"worker_id\":\"worker_");
    p = sg_put_u64(p, r->worker);
    SG_PUT_LIT(p, "\",\"record_processor_id\":\"surge\",\"benchmark_phase\":\"profiling\",\"was_cancelled\":");
    if (cancelled) {
        SG_PUT_LIT(p, "true,\"cancellation_time_ns\":");
        p = sg_put_i64(p, wall(end, off));
    } else {
        SG_PUT_LIT(p, "false,\"cancellation_time_ns\":null");
    }
    SG_PUT_LIT(p, "},\"metrics\":{");
    return p;
}

/* The metrics were written each after a comma: the first one's goes. Returns the new end. */
static char *drop_lead_comma(char *first, char *end)
{
    memmove(first, first + 1, (size_t)(end - first - 1));
    return end - 1;
}

/* The metrics of a successful record, in AIPerf's order, then surge's own. */
static char *ok_metrics(char *p, const sg_record_t *r)
{
    char *first = p;
    p = metric_int(p, "input_sequence_length", r->isl, "tokens");
    p = metric_ms(p, r, SG_M_TTFT);
    p = metric_ms(p, r, SG_M_TTST);
    if (r->reasoning_tokens > 0)
        p = metric_ms(p, r, SG_M_TTFO);
    p = metric_ms(p, r, SG_M_LATENCY);
    if (!r->no_output)
        p = metric_int(p, "output_sequence_length", r->osl, "tokens");
    if (r->reasoning_tokens > 0)
        p = metric_int(p, "reasoning_token_count", r->reasoning_tokens, "tokens");
    p = metric_ms(p, r, SG_M_ITL);
    /* tool calls (surge's names: AIPerf has none), only on responses that made some, as in surge's JSONL */
    double v;
    if (sg_record_metric(r, SG_M_TOOL_CALLS, &v))
        p = metric_int(p, sg_metric_tag(SG_M_TOOL_CALLS), r->tool_calls, "calls");
    if (sg_record_metric(r, SG_M_TOOL_TOKENS, &v))
        p = metric_int(p, sg_metric_tag(SG_M_TOOL_TOKENS), r->tool_tokens, "tokens");
    p = metric_ms(p, r, SG_M_TTFTC);
    double tps;
    /* none when all tokens came at one instant (ITL 0: sg_record_metric says so), as AIPerf leaves it out; the
     * bound keeps micro-units within a long */
    if (sg_record_metric(r, SG_M_TOKENS_PER_USER, &tps) && tps < 1e12)
        p = metric_micro(p, "output_token_throughput_per_user", llround(tps * 1e6), "tokens/sec/user");
    p = metric_ms(p, r, SG_M_TTFT_FROM_SEND);
    p = metric_ms(p, r, SG_M_LATENCY_FROM_SEND);
    p = metric_ms(p, r, SG_M_SCHEDULE_LAG);
    for (int id = SG_M_HTTP_CONNECTING; id <= SG_M_HTTP_DURATION; id++)
        p = metric_ms(p, r, (sg_metric_id_t)id);
    return drop_lead_comma(first, p);
}

/* ,"inter_chunk_latency":{"value":[gaps in ms],"unit":"ms"}: the gaps between content events (AIPerf's list). */
static void inter_chunk(sg_outbuf_t *ob, const sg_record_t *r)
{
    char *p = sg_outbuf_room(ob, 64);
    if (!p)
        return;
    char *start = p;
    SG_PUT_LIT(p, ",\"inter_chunk_latency\":{\"value\":[");
    ob->len += (size_t)(p - start);
    for (uint32_t i = 1; i < r->n_events;) {
        uint32_t end = r->n_events - i > GAPS_PER_ROOM ? i + GAPS_PER_ROOM : r->n_events;
        p = start = sg_outbuf_room(ob, (size_t)(end - i) * GAP_MAX);
        if (!p)
            return;
        for (; i < end; i++) {
            if (i > 1)
                *p++ = ',';
            p = sg_put_fixed(p, (int64_t)r->event_us[i] - (int64_t)r->event_us[i - 1], 3, 1000);
        }
        ob->len += (size_t)(p - start);
    }
    p = sg_outbuf_room(ob, 16);
    if (p) {
        start = p;
        SG_PUT_LIT(p, "],\"unit\":\"ms\"}");
        ob->len += (size_t)(p - start);
    }
}

/* ,"error":{"code":N|null,"type":"class","message":"..."} */
static char *error_details(char *p, const sg_record_t *r)
{
    SG_PUT_LIT(p, "},\"error\":{\"code\":");
    if (r->http_status)
        p = sg_put_i64(p, r->http_status);
    else
        SG_PUT_LIT(p, "null");
    SG_PUT_LIT(p, ",\"type\":\"");
    const char *cls = sg_err_class_name((sg_err_class_t)r->err_class);
    size_t cl = strlen(cls);
    memcpy(p, cls, cl);
    p += cl;
    SG_PUT_LIT(p, "\",\"message\":");
    p += sg_json_escape(p, r->err_msg, strlen(r->err_msg));
    SG_PUT_LIT(p, "}}\n");
    return p;
}

void sg_aiperf_record_line(sg_outbuf_t *ob, const sg_record_t *r, int64_t wall_offset_ns)
{
    char *p = sg_outbuf_room(ob, AIPERF_LINE_FIXED_MAX);
    if (!p)
        return;
    char *start = p;
    p = metadata(p, r, wall_offset_ns);
    if (r->err_class != SG_ERRC_NONE) {
        /* a failed request has only the prompt it sent (AIPerf's error_isl) and the error */
        char *first = p;
        p = drop_lead_comma(first, metric_int(p, "error_isl", r->isl, "tokens"));
        p = error_details(p, r);
        ob->len += (size_t)(p - start);
        return;
    }
    p = ok_metrics(p, r);
    ob->len += (size_t)(p - start);
    if (r->first_token_ns && r->n_events >= 2 && r->event_us)
        inter_chunk(ob, r);
    p = sg_outbuf_room(ob, 16);
    if (p) {
        start = p;
        SG_PUT_LIT(p, "},\"error\":null}\n");
        ob->len += (size_t)(p - start);
    }
}

/* ---------- summary: profile_export_aiperf.json and .csv ---------- */

/*
 * The metric blocks, by AIPerf's tag, in JsonExportData's order, with AIPerf's header (its MetricRegistry's) for
 * the CSV. surge's own distributions follow: AIPerf's readers take any top-level block that has a "unit".
 */
static const struct {
    const char *tag, *header;
} blocks[] = {
    {"request_throughput", "Request Throughput"},
    {"request_latency", "Request Latency"},
    {"request_count", "Request Count"},
    {"time_to_first_token", "Time to First Token"},
    {"time_to_second_token", "Time to Second Token"},
    {"inter_token_latency", "Inter Token Latency"},
    {"output_token_throughput", "Output Token Throughput"},
    {"output_token_throughput_per_user", "Output Token Throughput Per User"},
    {"output_sequence_length", "Output Sequence Length"},
    {"input_sequence_length", "Input Sequence Length"},
    {"goodput", "Goodput"},
    {"good_request_count", "GoodRequestCount"},
    {"min_request_timestamp", "Minimum Request Timestamp"},
    {"max_response_timestamp", "Maximum Response Timestamp"},
    {"inter_chunk_latency", "Inter Chunk Latency"},
    {"benchmark_duration", "Benchmark Duration"},
    {"total_isl", "Total Input Sequence Length"},
    {"total_osl", "Total Output Sequence Length"},
    {"error_request_count", "Error Request Count"},
    {"cancelled_request_count", "Cancelled Request Count"},
    {"total_token_throughput", "Total Token Throughput"},
    {"input_token_throughput", "Input Token Throughput"},
    {"time_to_first_token_from_send", "Time to First Token from Send"},
    {"request_latency_from_send", "Request Latency from Send"},
    {"schedule_lag", "Schedule Lag"},
    {"http_req_connecting", "HTTP Connecting"},
    {"http_req_tls_handshaking", "HTTP TLS Handshaking"},
    {"http_req_sending", "HTTP Sending"},
    {"http_req_waiting", "HTTP Waiting (TTFB)"},
    {"http_req_receiving", "HTTP Receiving"},
    {"http_req_duration", "HTTP Duration (excl. conn)"},
    /* tool calls (surge's tags and headers: AIPerf has no tool-call metric), only when responses made some */
    {"tool_call_count", "Tool Calls per Response"},
    {"tool_call_token_count", "Tool-Call Token Count"},
    {"time_to_first_tool_call_token", "Time to First Tool-Call Token"},
    {"tool_call_total", "Tool Call Total"},
    {"tool_call_token_share", "Tool-Call Token Share"},
    /* GPU telemetry over every GPU (AIPerf's tags and headers: its power-efficiency metrics), with it only */
    {"total_gpu_power", "Total GPU Power"},
    {"total_gpu_energy", "Total GPU Energy"},
    {"output_tokens_per_joule", "Output Tokens per Joule"},
};

/* A block's fields in AIPerf's order (JsonMetricResult; count on distributions since its schema 1.1). */
static const char *const stat_keys[] = {"avg", "p1",  "p5",  "p10", "p25", "p50", "p75",
                                        "p90", "p95", "p99", "min", "max", "std", "count"};

static int set(json_t *obj, const char *key, json_t *v)
{
    return v && json_object_set_new(obj, key, v) == 0 ? 0 : -ENOMEM;
}

/* surge's block for one tag, cut to AIPerf's fields; a distribution also gets AIPerf's sum (avg x count). */
static json_t *aiperf_block(json_t *ours)
{
    json_t *o = json_object();
    int rc = o ? set(o, "unit", json_incref(json_object_get(ours, "unit"))) : -ENOMEM;
    for (size_t i = 0; i < SG_ARRAY_LEN(stat_keys) && !rc; i++) {
        json_t *v = json_object_get(ours, stat_keys[i]);
        if (v)
            rc = set(o, stat_keys[i], json_incref(v));
    }
    json_t *count = json_object_get(ours, "count");
    if (!rc && count)
        rc = set(o, "sum",
                 json_real(json_number_value(json_object_get(ours, "avg")) * (double)json_integer_value(count)));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *single(const char *unit, json_t *avg)
{
    json_t *o = json_object();
    if (!o || set(o, "unit", json_string(unit)) || set(o, "avg", avg)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The blocks surge's summary has no field for: totals and the wall-clock bounds of the run. */
static int add_totals(json_t *ours, const sg_metrics_t *m, const sg_run_info_t *info)
{
    int rc = set(ours, "total_isl", single("tokens", json_integer((json_int_t)sg_metrics_input_tokens(m))));
    rc = rc ? rc : set(ours, "total_osl", single("tokens", json_integer((json_int_t)sg_metrics_output_tokens(m))));
    int64_t first = sg_metrics_first_intended_ns(m), last = sg_metrics_last_end_ns(m);
    if (rc || !first || !info->wall_offset_ns)
        return rc;
    rc = set(ours, "min_request_timestamp", single("ns", json_integer(wall(first, info->wall_offset_ns))));
    return rc ? rc : set(ours, "max_response_timestamp", single("ns", json_integer(wall(last, info->wall_offset_ns))));
}

/* "2025-10-08T12:34:56.789012Z" (UTC, as AIPerf's start_time and end_time); JSON null without a clock. */
static json_t *iso_time(int64_t mono_ns, int64_t wall_offset_ns)
{
    char buf[48];
    if (!mono_ns || !wall_offset_ns || !sg_iso_utc(buf, sizeof buf, wall(mono_ns, wall_offset_ns)))
        return json_null();
    return json_string(buf);
}

/* AIPerf's ErrorDetailsCount list from surge's error_summary: {"error_details": {code, type, message}, count}. */
static json_t *error_summary(json_t *ours)
{
    json_t *arr = json_array();
    size_t i;
    json_t *g;
    int rc = arr ? 0 : -ENOMEM;
    json_array_foreach(json_object_get(ours, "error_summary"), i, g)
    {
        json_t *e = json_object(), *d = json_object();
        rc = rc ? rc : set(e, "error_details", d); /* set takes d, and e below takes it along */
        rc = rc ? rc : set(e, "count", json_incref(json_object_get(g, "count")));
        rc = rc ? rc : json_array_append(arr, e);
        json_decref(e);
        rc = rc ? rc : set(d, "code", json_incref(json_object_get(g, "http_status")));
        rc = rc ? rc : set(d, "type", json_incref(json_object_get(g, "class")));
        rc = rc ? rc : set(d, "message", json_incref(json_object_get(g, "message")));
        if (rc)
            break;
    }
    if (rc) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* key from surge's flat config into dst[name] when it is there and not null (nor negative: surge's "not set"). */
static int copy_key(json_t *dst, const char *name, json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    if (!v || json_is_null(v) || (json_is_number(v) && json_number_value(v) < 0))
        return 0;
    return set(dst, name, json_incref(v));
}

static int endpoint_config(json_t *ic, json_t *c)
{
    json_t *e = json_object();
    int rc = set(ic, "endpoint", e);
    rc = rc ? rc : copy_key(e, "model_names", c, "model");
    rc = rc ? rc : copy_key(e, "model_selection_strategy", c, "model_selection_strategy");
    rc = rc ? rc : copy_key(e, "type", c, "endpoint_type");
    rc = rc ? rc : copy_key(e, "custom_endpoint", c, "endpoint");
    rc = rc ? rc : copy_key(e, "streaming", c, "streaming");
    rc = rc ? rc : copy_key(e, "url", c, "url");
    return rc ? rc : copy_key(e, "timeout_seconds", c, "request_timeout");
}

static int loadgen_config(json_t *ic, json_t *c)
{
    json_t *l = json_object();
    int rc = set(ic, "loadgen", l);
    rc = rc ? rc : copy_key(l, "concurrency", c, "concurrency");
    if (!rc && json_is_number(json_object_get(c, "request_rate"))) { /* "inf" has no AIPerf spelling */
        rc = copy_key(l, "request_rate", c, "request_rate");
        const char *d = json_string_value(json_object_get(c, "request_distribution"));
        if (!rc && d && (strcmp(d, "poisson") == 0 || strcmp(d, "constant") == 0))
            rc = set(l, "request_rate_mode", json_string(d));
    }
    rc = rc ? rc : copy_key(l, "request_count", c, "request_count");
    rc = rc ? rc : copy_key(l, "warmup_request_count", c, "warmup_request_count");
    return rc ? rc : copy_key(l, "benchmark_duration", c, "benchmark_duration");
}

static int input_output_config(json_t *ic, json_t *c)
{
    json_t *in = json_object(), *prompt = json_object(), *isl = json_object(), *osl = json_object();
    int rc = set(ic, "input", in);
    rc = rc ? rc : set(in, "prompt", prompt);
    rc = rc ? rc : set(prompt, "input_tokens", isl);
    rc = rc ? rc : set(prompt, "output_tokens", osl);
    rc = rc ? rc : copy_key(isl, "mean", c, "synthetic_input_tokens_mean");
    rc = rc ? rc : copy_key(isl, "stddev", c, "synthetic_input_tokens_stddev");
    rc = rc ? rc : copy_key(osl, "mean", c, "output_tokens_mean");
    rc = rc ? rc : copy_key(osl, "stddev", c, "output_tokens_stddev");
    rc = rc ? rc : copy_key(in, "file", c, "input_file");
    rc = rc ? rc : copy_key(in, "fixed_schedule", c, "fixed_schedule");
    rc = rc ? rc : copy_key(in, "random_seed", c, "random_seed");
    json_t *out = json_object();
    rc = rc ? rc : set(ic, "output", out);
    rc = rc ? rc : copy_key(out, "artifact_directory", c, "artifact_dir");
    rc = rc ? rc : copy_key(out, "slice_duration", c, "slice_duration");
    if (!rc && json_is_string(json_object_get(c, "tokenizer"))) {
        json_t *t = json_object();
        rc = set(ic, "tokenizer", t);
        rc = rc ? rc : copy_key(t, "name", c, "tokenizer");
    }
    return rc;
}

/*
 * input_config in AIPerf's UserConfig shape (endpoint, loadgen, input, output, tokenizer: what its readers look up,
 * e.g. endpoint.model_names[0], loadgen.concurrency, output.slice_duration), with surge's whole configuration under
 * "surge" (AIPerf's UserConfig ignores keys it does not know).
 */
static json_t *input_config(json_t *ours)
{
    json_t *c = json_object_get(ours, "input_config");
    json_t *ic = json_object();
    if (!ic)
        return NULL;
    int rc = json_is_object(c) ? 0 : set(ic, "surge", json_incref(c));
    if (json_is_object(c)) {
        rc = endpoint_config(ic, c);
        rc = rc ? rc : loadgen_config(ic, c);
        rc = rc ? rc : input_output_config(ic, c);
        rc = rc ? rc : set(ic, "surge", json_incref(c));
    }
    if (rc) {
        json_decref(ic);
        return NULL;
    }
    return ic;
}

/* ---------- GPU telemetry: AIPerf's telemetry_data ---------- */

/*
 * AIPerf's GPU metrics (its gpu_telemetry/constants.py: key, display name, unit), each from one of surge's per-GPU
 * figures (the summary's gpu_telemetry, metrics/srvmetrics.c) times AIPerf's scale from DCGM's units. A counter
 * (energy, XID) is one value, the increase over the run, as AIPerf reports counters; a gauge its distribution.
 */
static const struct {
    const char *key, *display, *unit, *surge;
    double scale;
    bool counter;
} GPU_METRICS[] = {
    {"gpu_power_usage", "GPU Power Usage", "W", "gpu_power", 1, false},
    {"energy_consumption", "Energy Consumption", "MJ", "energy", 1e-6, true}, /* surge's J */
    {"gpu_utilization", "GPU Utilization", "%", "gpu_utilization", 1, false},
    {"gpu_memory_used", "GPU Memory Used", "GB", "gpu_memory_used", 1.048576e-3, false}, /* MiB, as AIPerf scales */
    {"gpu_temperature", "GPU Temperature",
     "\xc2\xb0"
     "C",
     "gpu_temperature", 1, false},
    {"mem_utilization", "Memory Utilization", "%", "gpu_memory_copy_utilization", 1, false},
    {"sm_utilization", "SM Utilization", "%", "gpu_sm_active", 100, false}, /* a ratio */
    {"decoder_utilization", "Decoder Utilization", "%", "gpu_decoder_utilization", 1, false},
    {"encoder_utilization", "Encoder Utilization", "%", "gpu_encoder_utilization", 1, false},
    {"xid_errors", "XID Errors", "count", "gpu_xid_errors", 1, true},
};

/* AIPerf's gauge statistics (JsonMetricResult), scaled; the stat keys are stat_keys[] and sum. */
static json_t *gpu_gauge(const json_t *g, double scale, const char *unit)
{
    json_t *o = json_object();
    int rc = o ? set(o, "unit", json_string(unit)) : -ENOMEM;
    for (size_t i = 0; i < SG_ARRAY_LEN(stat_keys) && !rc; i++) {
        const char *k = strcmp(stat_keys[i], "count") == 0 ? "samples" : stat_keys[i];
        json_t *v = json_object_get(g, k);
        if (json_is_integer(v) && strcmp(k, "samples") == 0)
            rc = set(o, "count", json_incref(v));
        else if (json_is_number(v))
            rc = set(o, stat_keys[i], json_real(json_number_value(v) * scale));
    }
    json_t *avg = json_object_get(g, "avg"), *n = json_object_get(g, "samples");
    if (!rc && json_is_number(avg) && json_is_integer(n))
        rc = set(o, "sum", json_real(json_number_value(avg) * scale * (double)json_integer_value(n)));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* One of AIPerf's metrics of one GPU from surge's figures; NULL when surge has none. */
static json_t *gpu_metric(const json_t *gpu, size_t k)
{
    const json_t *g = json_object_get(gpu, GPU_METRICS[k].surge);
    if (!json_is_object(g))
        return NULL;
    const char *unit = GPU_METRICS[k].unit;
    if (!GPU_METRICS[k].counter)
        return json_is_number(json_object_get(g, "avg")) ? gpu_gauge(g, GPU_METRICS[k].scale, unit) : NULL;
    double v;
    if (strcmp(GPU_METRICS[k].surge, "energy") == 0) {
        if (!json_is_number(json_object_get(g, "value")))
            return NULL;
        v = json_number_value(json_object_get(g, "value"));
    } else { /* a gauge read as AIPerf reads a counter: last - first, never below 0 */
        const json_t *first = json_object_get(g, "first"), *last = json_object_get(g, "last");
        if (!json_is_number(first) || !json_is_number(last))
            return NULL;
        v = json_number_value(last) - json_number_value(first);
        v = v > 0 ? v : 0;
    }
    return single(unit, json_real(v * GPU_METRICS[k].scale));
}

/* AIPerf's name for an exporter: its URL without the scheme and without a trailing /metrics. */
static char *endpoint_display(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t n = strlen(p);
    if (n >= 8 && strcmp(p + n - 8, "/metrics") == 0)
        n -= 8;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = 0;
    }
    return d;
}

/* {gpu_index, gpu_name, gpu_uuid, hostname, metrics} (AIPerf's GpuSummary); NULL when the gpu label is no index. */
static json_t *gpu_summary(const json_t *gpu)
{
    const char *idx = json_string_value(json_object_get(gpu, "gpu"));
    char *end;
    long i = idx && *idx ? strtol(idx, &end, 10) : -1;
    if (!idx || !*idx || *end || i < 0)
        return NULL;
    const char *host = json_string_value(json_object_get(gpu, "hostname"));
    json_t *o = json_object(), *metrics = json_object();
    int rc = o && metrics ? set(o, "gpu_index", json_integer(i)) : -ENOMEM;
    rc = rc ? rc : set(o, "gpu_name", json_incref(json_object_get(gpu, "model_name")));
    rc = rc ? rc : set(o, "gpu_uuid", json_incref(json_object_get(gpu, "uuid")));
    rc = rc ? rc : set(o, "hostname", host && *host ? json_string(host) : json_null());
    for (size_t k = 0; k < SG_ARRAY_LEN(GPU_METRICS) && !rc; k++) {
        json_t *v = gpu_metric(gpu, k);
        if (v)
            rc = set(metrics, GPU_METRICS[k].key, v);
    }
    rc = rc ? rc : set(o, "metrics", json_incref(metrics));
    json_decref(metrics);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/*
 * AIPerf's telemetry_data (TelemetryExportData): summary {endpoints_configured, endpoints_successful, start_time,
 * end_time}, endpoints {"host:port": {gpus: {"gpu_N": GpuSummary}}}. surge's gpu_telemetry lists the GPUs of the
 * exporters that answered, so both endpoint lists are those exporters' URLs. NULL without GPUs.
 */
static json_t *telemetry_data(json_t *ours, const sg_metrics_t *m, const sg_run_info_t *info)
{
    json_t *gpus = json_object_get(json_object_get(ours, "gpu_telemetry"), "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0)
        return NULL;
    json_t *root = json_object(), *summary = json_object(), *urls = json_array(), *eps = json_object();
    int rc = root && summary && urls && eps ? 0 : -ENOMEM;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        const char *url = json_string_value(json_object_get(g, "endpoint"));
        json_t *gs = url ? gpu_summary(g) : NULL;
        char *disp = url ? endpoint_display(url) : NULL;
        if (gs && disp && !rc) {
            json_t *ep = json_object_get(eps, disp);
            if (!ep) {
                ep = json_object();
                rc = set(eps, disp, ep);
                rc = rc ? rc : set(ep, "gpus", json_object());
                rc = rc ? rc : json_array_append_new(urls, json_string(url));
            }
            char key[48];
            snprintf(key, sizeof key, "gpu_%" JSON_INTEGER_FORMAT,
                     json_integer_value(json_object_get(gs, "gpu_index")));
            rc = rc ? rc : set(json_object_get(ep, "gpus"), key, json_incref(gs));
        }
        json_decref(gs);
        free(disp);
    }
    rc = rc ? rc : set(summary, "endpoints_configured", json_incref(urls));
    rc = rc ? rc : set(summary, "endpoints_successful", json_incref(urls));
    rc = rc ? rc : set(summary, "start_time", iso_time(sg_metrics_first_intended_ns(m), info->wall_offset_ns));
    rc = rc ? rc : set(summary, "end_time", iso_time(sg_metrics_last_end_ns(m), info->wall_offset_ns));
    rc = rc ? rc : set(root, "summary", json_incref(summary));
    rc = rc ? rc : set(root, "endpoints", json_incref(eps));
    json_decref(summary);
    json_decref(urls);
    json_decref(eps);
    if (rc || json_object_size(json_object_get(root, "endpoints")) == 0) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/*
 * AIPerf's totals over every GPU (its compute_efficiency_metrics): total_gpu_power (the GPUs' mean powers summed),
 * total_gpu_energy (J) and output_tokens_per_joule, each only where every GPU has the figure (surge's rule for
 * tokens per joule: a GPU without energy would make the total too small).
 */
static int add_gpu_totals(json_t *ours)
{
    json_t *t = json_object_get(ours, "gpu_telemetry");
    json_t *gpus = json_object_get(t, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0)
        return 0;
    double power = 0;
    bool all = true;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g)
    {
        json_t *avg = json_object_get(json_object_get(g, "gpu_power"), "avg");
        all = all && json_is_number(avg);
        power += json_number_value(avg);
    }
    int rc = all ? set(ours, "total_gpu_power", single("W", json_real(power))) : 0;
    json_t *ej = json_object_get(t, "energy_j"), *tpj = json_object_get(t, "tokens_per_joule");
    if (!rc && json_is_number(ej))
        rc = set(ours, "total_gpu_energy", single("J", json_real(json_number_value(ej))));
    if (!rc && json_is_number(tpj))
        rc = set(ours, "output_tokens_per_joule", single("tokens/J", json_real(json_number_value(tpj))));
    return rc;
}

/* JsonExportData for the run: schema_version, the blocks, then the run's provenance. */
static json_t *build_aiperf(const sg_metrics_t *m, const sg_run_info_t *info)
{
    static const sg_run_info_t none;
    info = info ? info : &none;
    json_t *ours = sg_export_summary(m, info);
    json_t *root = json_object();
    int rc = ours && root ? add_totals(ours, m, info) : -ENOMEM;
    rc = rc ? rc : add_gpu_totals(ours);
    /* 1.1: count and sum on the distributions (AIPerf's docs/reference/json-export-schema.md) */
    rc = rc ? rc : set(root, "schema_version", json_string("1.1"));
    for (size_t i = 0; i < SG_ARRAY_LEN(blocks) && !rc; i++) {
        json_t *b = json_object_get(ours, blocks[i].tag);
        if (json_is_object(b))
            rc = set(root, blocks[i].tag, aiperf_block(b));
    }
    rc = rc ? rc : set(root, "input_config", input_config(ours));
    rc = rc ? rc : set(root, "was_cancelled", json_boolean(info->interrupted));
    rc = rc ? rc : set(root, "error_summary", error_summary(ours));
    int64_t off = info->wall_offset_ns;
    rc = rc ? rc : set(root, "start_time", iso_time(sg_metrics_first_intended_ns(m), off));
    rc = rc ? rc : set(root, "end_time", iso_time(sg_metrics_last_end_ns(m), off));
    json_t *tel = rc ? NULL : telemetry_data(ours, m, info);
    if (tel)
        rc = set(root, "telemetry_data", tel);
    json_decref(ours);
    if (rc) {
        json_decref(root);
        return NULL;
    }
    return root;
}

int sg_export_aiperf_json(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    return sg_json_write(path, build_aiperf(m, info));
}

/* AIPerf's CSV number: an integer as one, anything else with two decimals; empty when absent. */
static void csv_number(FILE *f, json_t *v)
{
    if (json_is_integer(v))
        fprintf(f, ",%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_number(v))
        fprintf(f, ",%.2f", json_number_value(v));
    else
        fputc(',', f);
}

/* AIPerf's row name: the header, then the unit in parentheses unless it is a count of requests. */
static void csv_name(FILE *f, const char *header, json_t *block)
{
    const char *unit = json_string_value(json_object_get(block, "unit"));
    if (unit && *unit && strcmp(unit, "requests") != 0 && strcmp(unit, "count") != 0)
        fprintf(f, "%s (%s)", header, unit);
    else
        fputs(header, f);
}

/* blocks[] index order by tag, as AIPerf sorts its rows. */
static int cmp_block(const void *a, const void *b)
{
    return strcmp(blocks[*(const size_t *)a].tag, blocks[*(const size_t *)b].tag);
}

/* AIPerf's CSV columns of a distribution (its STAT_KEYS). */
static const char *const cols[] = {"avg", "min", "max", "p1",  "p5",  "p10", "p25",
                                   "p50", "p75", "p90", "p95", "p99", "std"};

/*
 * AIPerf's GPU telemetry table after the metrics (its metrics_csv_exporter.py): two blank lines, then
 * Endpoint,GPU_Index,GPU_Name,GPU_UUID,Metric,avg,min,max,p1,...,p99,std[,Hostname], a row per GPU and metric in
 * GPU_METRICS' order, the metric as "Display (unit)"; Hostname only when some GPU has one.
 */
static void write_telemetry_csv(FILE *f, json_t *tel)
{
    json_t *eps = json_object_get(tel, "endpoints");
    if (!json_is_object(eps))
        return;
    const char *ep;
    json_t *e, *g;
    bool host = false;
    json_object_foreach(eps, ep, e)
    {
        const char *gk;
        json_object_foreach(json_object_get(e, "gpus"), gk, g) host =
            host || json_is_string(json_object_get(g, "hostname"));
    }
    fputs("\n\nEndpoint,GPU_Index,GPU_Name,GPU_UUID,Metric", f);
    for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++)
        fprintf(f, ",%s", cols[c]);
    fputs(host ? ",Hostname\n" : "\n", f);
    json_object_foreach(eps, ep, e)
    {
        const char *gk;
        json_object_foreach(json_object_get(e, "gpus"), gk, g)
        {
            json_t *metrics = json_object_get(g, "metrics");
            for (size_t k = 0; k < SG_ARRAY_LEN(GPU_METRICS); k++) {
                json_t *b = json_object_get(metrics, GPU_METRICS[k].key);
                if (!b)
                    continue;
                sg_csv_text(f, ep);
                fprintf(f, ",%" JSON_INTEGER_FORMAT ",", json_integer_value(json_object_get(g, "gpu_index")));
                sg_csv_text(f, json_string_value(json_object_get(g, "gpu_name")));
                fputc(',', f);
                sg_csv_text(f, json_string_value(json_object_get(g, "gpu_uuid")));
                fprintf(f, ",%s (%s)", GPU_METRICS[k].display, GPU_METRICS[k].unit);
                for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++)
                    csv_number(f, json_object_get(b, cols[c]));
                if (host) {
                    fputc(',', f);
                    const char *h = json_string_value(json_object_get(g, "hostname"));
                    sg_csv_text(f, h ? h : "None"); /* as AIPerf's str(None) */
                }
                fputc('\n', f);
            }
        }
    }
}

/*
 * AIPerf's two parts, a blank line between (csv_exporter.py): the blocks with percentiles under
 * Metric,avg,min,max,p1,...,p99,std; then Metric,Value for the single values. Rows sorted by tag. Then, with GPU
 * telemetry, its GPU table.
 */
static void write_aiperf_csv(FILE *f, json_t *root)
{
    size_t order[SG_ARRAY_LEN(blocks)];
    for (size_t i = 0; i < SG_ARRAY_LEN(blocks); i++)
        order[i] = i;
    qsort(order, SG_ARRAY_LEN(blocks), sizeof(order[0]), cmp_block);
    fputs("Metric", f);
    for (size_t c = 0; c < SG_ARRAY_LEN(cols); c++)
        fprintf(f, ",%s", cols[c]);
    fputc('\n', f);
    for (int part = 0; part < 2; part++) {
        if (part == 1)
            fputs("\nMetric,Value\n", f);
        for (size_t i = 0; i < SG_ARRAY_LEN(blocks); i++) {
            json_t *b = json_object_get(root, blocks[order[i]].tag);
            bool dist = json_object_get(b, "p50") != NULL;
            if (!b || dist != (part == 0))
                continue;
            csv_name(f, blocks[order[i]].header, b);
            for (size_t c = 0; c < (dist ? SG_ARRAY_LEN(cols) : 1); c++)
                csv_number(f, json_object_get(b, cols[c]));
            fputc('\n', f);
        }
    }
    json_t *tel = json_object_get(root, "telemetry_data");
    if (tel)
        write_telemetry_csv(f, tel);
}

int sg_export_aiperf_csv(const char *path, const sg_metrics_t *m, const sg_run_info_t *info)
{
    json_t *root = build_aiperf(m, info);
    if (!root)
        return -ENOMEM;
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (!rc) {
        write_aiperf_csv(of.f, root);
        if (ferror(of.f)) {
            rc = sg_outfile_error(&of);
            sg_outfile_abort(&of);
        } else {
            rc = sg_outfile_commit(&of);
        }
    }
    json_decref(root);
    return rc;
}
