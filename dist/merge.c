/*
 * `surge merge DIR... -o OUT`, and the merge rank 0 does at the end of a multi-process run: several runs of one
 * configuration, each in its own artifact directory, become one run's files, as exact as a single machine's.
 *
 * Each directory's profile_export_surge.jsonl is read back into records (records_in.c) and put on one clock:
 * the summary's clock.records_origin_ns places a file's zero relative to its run's start instant, and the runs
 * of one multi-process run share that instant. Every record goes to sg_metrics_add (the same function the
 * workers use, so the histograms are those one process would have built from the same requests) and to one
 * record log, from which the usual exporters write the merged JSONL (in intended-time order), AIPerf's files,
 * the CSV and the summary. Throughput is over the global window (first intended start to last end of any run);
 * errors, re-sends, warmup and client CPU are summed; SLOs are judged again on the merged metrics.
 */
#define _GNU_SOURCE /* asprintf */
#include "dist_int.h"

#include "sg_artdir.h"
#include "sg_slo.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The origin merged times get: far from 0 (0 means "absent" in a record), the same for every run. */
#define MERGE_T0 ((int64_t)1 << 50)

/* input_config members that may differ between the parts of one run. */
static const char *const per_part_keys[] = {"artifact_dir",        "workers",    "verbose",  "io_backend",
                                            "generate_plots",      "world_size", "rank",     "coordinator",
                                            "coordinator_timeout", "progress",   "overwrite"};

typedef struct {
    const char *dir;
    json_t *summary;
    char *jsonl;
    int64_t origin; /* records_origin_ns */
    int64_t start_realtime_ns;
} part_t;

typedef struct {
    sg_metrics_t *m;
    sg_reclog_t *log;
    char **models;
    size_t n_models, cap_models;
    uint64_t records;
} sink_t;

static bool per_part(const char *key)
{
    for (size_t i = 0; i < SG_ARRAY_LEN(per_part_keys); i++)
        if (strcmp(key, per_part_keys[i]) == 0)
            return true;
    return false;
}

static double num_at(json_t *o, const char *key, const char *stat)
{
    json_t *v = json_object_get(o, key);
    if (stat && json_is_object(v))
        v = json_object_get(v, stat);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* An integer member exactly (a double holds only 53 bits: wall-clock ns need 61). */
static int64_t int_at(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)num_at(o, key, NULL);
}

static char *stem_of(json_t *cfg)
{
    const char *file = json_string_value(json_object_get(cfg, "profile_export_file"));
    if (!file)
        file = "profile_export.json";
    const char *dot = strrchr(file, '.');
    size_t n = dot ? (size_t)(dot - file) : strlen(file);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, file, n);
        s[n] = '\0';
    }
    return s;
}

static char *join3(const char *dir, const char *stem, const char *suffix)
{
    size_t n = strlen(dir) + strlen(stem) + strlen(suffix) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", dir, stem, suffix);
    return p;
}

/* The summary of dir, which must be one run's (not a sweep's or search's). */
static int load_part(part_t *p, const char *dir, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->dir = dir;
    char *path = join3(dir, "profile_export_surge", ".json");
    if (!path)
        return -1;
    json_error_t je;
    p->summary = json_load_file(path, 0, &je);
    if (!p->summary) {
        struct stat st;
        if (stat(path, &st) < 0)
            snprintf(err, errlen, "%s is not a surge run: it has no profile_export_surge.json%s", dir,
                     stat(dir, &st) < 0 ? " (no such directory)" : "");
        else
            snprintf(err, errlen, "%s: %s (line %d)", path, je.text, je.line);
        free(path);
        return -1;
    }
    free(path);
    json_t *cfg = json_object_get(p->summary, "input_config");
    if (!json_is_object(cfg)) {
        snprintf(err, errlen, "%s: its summary has no input_config", dir);
        return -1;
    }
    char *stem = stem_of(cfg);
    p->jsonl = stem ? join3(dir, stem, "_surge.jsonl") : NULL;
    free(stem);
    if (!p->jsonl)
        return -1;
    if (access(p->jsonl, R_OK) != 0) {
        snprintf(err, errlen, "%s is not a whole surge run: %s is missing", dir, p->jsonl);
        return -1;
    }
    json_t *clock = json_object_get(p->summary, "clock");
    p->origin = int_at(clock, "records_origin_ns");
    p->start_realtime_ns = int_at(clock, "start_realtime_ns");
    return 0;
}

static void value_text(json_t *v, char *buf, size_t cap)
{
    char *t = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(buf, cap, "%s", t ? t : "absent");
    free(t);
}

/* Every part ran the same configuration, but for what may differ per part. */
static int check_same(const part_t *a, const part_t *b, char *err, size_t errlen)
{
    json_t *ca = json_object_get(a->summary, "input_config"), *cb = json_object_get(b->summary, "input_config");
    json_t *both[2] = {ca, cb};
    for (int side = 0; side < 2; side++) {
        const char *key;
        json_t *v;
        json_object_foreach(both[side], key, v)
        {
            if (per_part(key) || json_equal(json_object_get(ca, key), json_object_get(cb, key)))
                continue;
            char va[200], vb[200];
            value_text(json_object_get(ca, key), va, sizeof va);
            value_text(json_object_get(cb, key), vb, sizeof vb);
            snprintf(err, errlen,
                     "%s and %s ran different configurations (%s: %s against %s): only parts of one run merge", a->dir,
                     b->dir, key, va, vb);
            return -1;
        }
    }
    return 0;
}

static int on_record(void *ctx, const sg_record_t *r, const char *model)
{
    sink_t *s = ctx;
    size_t mi = 0;
    while (mi < s->n_models && strcmp(s->models[mi], model) != 0)
        mi++;
    if (mi == s->n_models) {
        if (s->n_models == s->cap_models) {
            size_t cap = s->cap_models ? s->cap_models * 2 : 8;
            char **m = realloc(s->models, cap * sizeof(*m));
            if (!m)
                return -ENOMEM;
            s->models = m;
            s->cap_models = cap;
        }
        if (!(s->models[s->n_models] = strdup(model)))
            return -ENOMEM;
        s->n_models++;
    }
    sg_record_t rec = *r;
    rec.model = (uint32_t)mi;
    sg_metrics_add(s->m, &rec);
    s->records++;
    return sg_reclog_append(s->log, &rec);
}

/* The goodput SLOs and --slo checks of a configuration, as the run had them. */
static int slos_of(json_t *cfg, sg_slo_t *slos, size_t *n_slos, sg_slo_check_t *checks, size_t *n_checks, char *err,
                   size_t errlen)
{
    *n_slos = *n_checks = 0;
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "goodput"), key, v)
    {
        sg_metric_id_t id;
        if (*n_slos >= SG_SLO_MAX || sg_metric_find(key, strlen(key), &id) != 0 || !json_is_number(v)) {
            snprintf(err, errlen, "input_config.goodput: cannot use %s", key);
            return -1;
        }
        slos[(*n_slos)++] = (sg_slo_t){.metric = id, .threshold = json_number_value(v)};
    }
    size_t i;
    json_array_foreach(json_object_get(cfg, "slo"), i, v)
    {
        char why[256];
        if (*n_checks >= SG_SLO_MAX || !json_is_string(v) ||
            sg_slo_parse(json_string_value(v), &checks[*n_checks], why, sizeof why) != 0) {
            snprintf(err, errlen, "input_config.slo: cannot use %s", json_is_string(v) ? json_string_value(v) : "?");
            return -1;
        }
        (*n_checks)++;
    }
    return 0;
}

/*
 * The parts' "media" objects as one (docs/metrics.md): requests, images, clips and bytes summed, the means again
 * from the sums, the least and most any entry carried over all parts; the ranks share one table (one seed), so the
 * distinct sets are the sum's requests, at most its entries. NULL when no part has one.
 */
static char *merge_media(const part_t *parts, size_t n)
{
    json_int_t sent = 0, images = 0, audios = 0, bytes = 0, mn = -1, mx = 0, table = 0;
    double req_bytes = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_object_get(parts[i].summary, "media");
        if (!json_is_object(m))
            continue;
        any = true;
        json_int_t b = json_integer_value(json_object_get(m, "media_bytes"));
        double share = json_number_value(json_object_get(m, "media_share_of_request_bytes"));
        sent += json_integer_value(json_object_get(m, "requests"));
        images += json_integer_value(json_object_get(m, "images"));
        audios += json_integer_value(json_object_get(m, "audios"));
        bytes += b;
        req_bytes += share > 0 ? (double)b / share : 0;
        json_int_t lo = json_integer_value(json_object_get(m, "media_bytes_per_request_min"));
        json_int_t hi = json_integer_value(json_object_get(m, "media_bytes_per_request_max"));
        json_int_t t = json_integer_value(json_object_get(m, "table_entries"));
        mn = mn < 0 || lo < mn ? lo : mn;
        mx = hi > mx ? hi : mx;
        table = t > table ? t : table;
    }
    if (!any)
        return NULL;
    double d = sent ? (double)sent : 1;
    json_int_t distinct = sent < table ? sent : table;
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:f, s:I, s:f}", "table_entries", table,
                          "requests", sent, "images", images, "audios", audios, "media_bytes", bytes,
                          "images_per_request", (double)images / d, "audios_per_request", (double)audios / d,
                          "media_bytes_per_request", (double)bytes / d, "media_bytes_per_request_min", mn < 0 ? 0 : mn,
                          "media_bytes_per_request_max", mx, "media_share_of_request_bytes",
                          req_bytes > 0 ? (double)bytes / req_bytes : 0.0, "distinct_media_sets", distinct,
                          "sends_per_media_set", distinct ? (double)sent / (double)distinct : 0.0);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The summary's "merged_from" (and the parts' own "dist" members, which name their rank). */
static json_t *parts_json(const part_t *parts, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "dir", json_string(parts[i].dir));
        json_object_set_new(o, "request_count",
                            json_integer((json_int_t)num_at(parts[i].summary, "request_count", "avg")));
        json_object_set_new(o, "error_request_count",
                            json_integer((json_int_t)num_at(parts[i].summary, "error_request_count", "avg")));
        json_object_set_new(o, "cancelled_request_count",
                            json_integer((json_int_t)num_at(parts[i].summary, "cancelled_request_count", "avg")));
        json_object_set_new(o, "records_origin_ns", json_integer((json_int_t)parts[i].origin));
        json_object_set_new(o, "start_realtime_ns", json_integer((json_int_t)parts[i].start_realtime_ns));
        json_t *be = json_object_get(parts[i].summary, "io_backend");
        json_object_set(o, "io_backend", be ? be : json_null());
        json_t *d = json_object_get(parts[i].summary, "dist");
        if (d)
            json_object_set(o, "dist", d);
        json_array_append_new(arr, o);
    }
    return arr;
}

int sg_merge_run(const sg_merge_t *mg, char *err, size_t errlen)
{
    int code = -1;
    size_t n = mg->n_dirs;
    part_t *parts = calloc(n ? n : 1, sizeof(*parts));
    sink_t sink = {0};
    char *log_path = NULL, *stem = NULL, *extra = NULL, *input = NULL, *reuse_text = NULL, *media_text = NULL;
    sg_stall_t *stalls = NULL;
    size_t n_stalls = 0;
    uint64_t stalls_dropped = 0;
    sg_unreach_t *unreach = NULL;
    size_t n_unreach = 0;
    char *p_sjson = NULL, *p_scsv = NULL, *p_sjsonl = NULL, *p_ajson = NULL, *p_acsv = NULL, *p_ajsonl = NULL;
    json_t *cfg_out = NULL, *extra_o = NULL;
    if (!parts)
        goto oom;
    if (n == 0) {
        snprintf(err, errlen, "nothing to merge");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (load_part(&parts[i], mg->dirs[i], err, errlen) < 0)
            goto out;
    for (size_t i = 1; i < n; i++)
        if (check_same(&parts[0], &parts[i], err, errlen) < 0)
            goto out;
    json_t *cfg = json_object_get(parts[0].summary, "input_config");
    sg_slo_t slos[SG_SLO_MAX];
    sg_slo_check_t checks[SG_SLO_MAX];
    size_t n_slos, n_checks;
    if (slos_of(cfg, slos, &n_slos, checks, &n_checks, err, errlen) < 0)
        goto out;
    struct stat st;
    if (mkdir(mg->out_dir, 0755) < 0 && !(errno == EEXIST && stat(mg->out_dir, &st) == 0 && S_ISDIR(st.st_mode))) {
        snprintf(err, errlen, "-o %s: %s", mg->out_dir, strerror(errno));
        goto out;
    }

    /* every record, once, on the one clock */
    if (!(sink.m = sg_metrics_new(slos, n_slos)) ||
        asprintf(&log_path, "%s/.surge-merge-%d.log", mg->out_dir, (int)getpid()) < 0)
        goto oom;
    int lerr = 0;
    if (!(sink.log = sg_reclog_open(log_path, &lerr))) {
        snprintf(err, errlen, "%s: %s", log_path, strerror(-lerr));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        /* a file's zero sits at records_origin_ns after its run's start; the parts' starts are one instant */
        if (sg_dist_read_jsonl(parts[i].jsonl, MERGE_T0 + parts[i].origin, on_record, &sink, err, errlen) < 0) {
            int e = sg_reclog_close(sink.log);
            (void)e;
            sink.log = NULL;
            goto out;
        }
    }
    lerr = sg_reclog_close(sink.log);
    sink.log = NULL;
    if (lerr < 0) {
        snprintf(err, errlen, "%s: %s", log_path, strerror(-lerr));
        goto out;
    }

    /* what the run was: the first part's configuration, the parts' counters summed */
    uint64_t warmup = 0, resent = 0, silent = 0;
    double cpu = 0, cpu_split[4] = {0}; /* load phase user, system; whole process user, system */
    bool split_known[2] = {true, true}; /* every part has that split (older parts' summaries did not) */
    static const char *const split_keys[4] = {"client_cpu_time_user", "client_cpu_time_system", "process_cpu_time_user",
                                              "process_cpu_time_system"};
    uint64_t stamped = 0, unstamped = 0, refused = 0, steps = 0, shared = 0;
    const char *wake_method = NULL; /* the parts' client_wakeups, summed */
    uint32_t wake_us = 0;
    uint64_t wake_turns = 0, wake_waits = 0, wake_completions = 0, wake_coalesced = 0, wake_coalesced_ns = 0;
    double step_max_ms = 0;
    bool stamps_asked = false, stamps_known = false;
    bool interrupted = mg->interrupted, reuse_whole = false, reuse_stream = false, mixed = false;
    const char *backend = json_string_value(json_object_get(parts[0].summary, "io_backend"));
    for (size_t i = 0; i < n; i++) {
        json_t *s = parts[i].summary;
        warmup += (uint64_t)num_at(s, "warmup_request_count", "avg");
        resent += (uint64_t)num_at(s, "resent_request_count", "avg");
        cpu += num_at(s, "client_cpu_time", "avg");
        for (int k = 0; k < 4; k++) {
            split_known[k / 2] &= json_object_get(s, split_keys[k]) != NULL;
            cpu_split[k] += num_at(s, split_keys[k], "avg");
        }
        json_t *ka = json_object_get(s, "keep_alive");
        silent += (uint64_t)num_at(ka, "silent_closes", NULL);
        reuse_whole |= json_is_true(json_object_get(ka, "no_reuse_after_whole"));
        reuse_stream |= json_is_true(json_object_get(ka, "no_reuse_after_stream"));
        interrupted |= json_is_true(json_object_get(s, "was_interrupted"));
        json_t *ts = json_object_get(s, "timestamps");
        if (json_is_object(ts)) {
            const char *src = json_string_value(json_object_get(s, "timestamp_source"));
            stamps_known = true;
            stamps_asked |= src && strcmp(src, "user") != 0;
            stamped += (uint64_t)num_at(ts, "kernel_reads", NULL);
            unstamped += (uint64_t)num_at(ts, "user_reads", NULL);
            refused += (uint64_t)num_at(ts, "refused_connections", NULL);
            steps += (uint64_t)num_at(ts, "clock_steps", NULL);
            shared += (uint64_t)num_at(ts, "events_sharing_a_read", NULL);
            if (num_at(ts, "clock_step_max_ms", NULL) > step_max_ms)
                step_max_ms = num_at(ts, "clock_step_max_ms", NULL);
        }
        json_t *cw = json_object_get(s, "client_wakeups");
        if (json_is_object(cw)) { /* the parts' loops: counts add up; the window bound is the largest */
            const char *meth = json_string_value(json_object_get(cw, "method"));
            if (meth && !wake_method)
                wake_method = meth;
            double us = num_at(cw, "coalesce_us", NULL);
            wake_us = us > wake_us ? (uint32_t)us : wake_us;
            wake_turns += (uint64_t)num_at(cw, "turns", NULL);
            wake_waits += (uint64_t)num_at(cw, "wakeups", NULL);
            wake_completions += (uint64_t)num_at(cw, "completions", NULL);
            uint64_t c = (uint64_t)num_at(cw, "coalesced", NULL);
            wake_coalesced += c;
            wake_coalesced_ns += (uint64_t)llround(num_at(cw, "mean_window_us", NULL) * 1e3 * (double)c);
        }
        const char *b = json_string_value(json_object_get(s, "io_backend"));
        mixed |= !b || !backend || strcmp(b, backend) != 0;
    }
    /* the parts' client stalls, on the one clock (the parts' starts are one instant); a rank's workers are its
     * streams from stream_offset */
    double stall_threshold = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *cs = json_object_get(parts[i].summary, "client_stalls");
        if (!json_is_object(cs))
            continue;
        if (stall_threshold <= 0)
            stall_threshold = num_at(cs, "threshold_ms", NULL);
        stalls_dropped += (uint64_t)num_at(cs, "not_listed", NULL);
        json_t *ws = json_object_get(cs, "windows");
        size_t k;
        json_t *w;
        uint32_t offset = (uint32_t)num_at(json_object_get(parts[i].summary, "dist"), "stream_offset", NULL);
        json_array_foreach(ws, k, w)
        {
            sg_stall_t *grown = realloc(stalls, (n_stalls + 1) * sizeof(*stalls));
            if (!grown)
                goto oom;
            stalls = grown;
            stalls[n_stalls++] = (sg_stall_t){
                .worker = offset + (uint32_t)num_at(w, "worker", NULL),
                .start_s = num_at(w, "start_s", NULL),
                .end_s = num_at(w, "end_s", NULL),
                .max_lag_ms = num_at(w, "max_lag_ms", NULL),
                .requests = (uint64_t)num_at(w, "requests_due", NULL),
            };
        }
    }
    for (size_t a = 1; a < n_stalls; a++) /* by start, as a run lists them */
        for (size_t b = a; b > 0 && stalls[b].start_s < stalls[b - 1].start_s; b--) {
            sg_stall_t t = stalls[b];
            stalls[b] = stalls[b - 1];
            stalls[b - 1] = t;
        }
    /* the parts' server_unreachable windows, on the one clock: those that overlap are one outage */
    for (size_t i = 0; i < n; i++) {
        json_t *ua = json_object_get(parts[i].summary, "server_unreachable");
        size_t k;
        json_t *u;
        json_array_foreach(ua, k, u)
        {
            sg_unreach_t *grown = realloc(unreach, (n_unreach + 1) * sizeof(*unreach));
            if (!grown)
                goto oom;
            unreach = grown;
            unreach[n_unreach++] = (sg_unreach_t){
                .start_s = num_at(u, "start_s", NULL),
                .end_s = num_at(u, "end_s", NULL),
                .refused = (uint64_t)num_at(u, "refused", NULL),
                .waiting = (uint64_t)num_at(u, "slots_waiting", NULL),
                .recovered = json_is_true(json_object_get(u, "recovered")),
            };
        }
    }
    for (size_t a = 1; a < n_unreach; a++)
        for (size_t b = a; b > 0 && unreach[b].start_s < unreach[b - 1].start_s; b--) {
            sg_unreach_t t = unreach[b];
            unreach[b] = unreach[b - 1];
            unreach[b - 1] = t;
        }
    size_t n_merged = 0;
    for (size_t a = 0; a < n_unreach; a++) {
        sg_unreach_t *cur = n_merged ? &unreach[n_merged - 1] : NULL;
        if (!cur || unreach[a].start_s > cur->end_s) {
            unreach[n_merged++] = unreach[a];
            continue;
        }
        if (unreach[a].end_s >= cur->end_s) {
            cur->end_s = unreach[a].end_s;
            cur->recovered = unreach[a].recovered; /* the last to end says whether the server came back */
        }
        cur->refused += unreach[a].refused;
        cur->waiting += unreach[a].waiting;
    }
    n_unreach = n_merged;
    if (!(cfg_out = json_deep_copy(cfg)))
        goto oom;
    json_object_set_new(cfg_out, "artifact_dir", json_string(mg->out_dir));
    if (!(input = json_dumps(cfg_out, JSON_COMPACT)))
        goto oom;
    if (!(extra_o = json_object()))
        goto oom;
    json_t *clock = json_object();
    json_object_set_new(clock, "start_realtime_ns", json_integer((json_int_t)parts[0].start_realtime_ns));
    json_object_set_new(extra_o, "clock", clock);
    json_object_set_new(extra_o, "merged_from", parts_json(parts, n));
    /* the parts' record logs together: their bytes on disk, and the records their workers dropped */
    json_int_t log_bytes = 0, log_dropped = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *rl = json_object_get(parts[i].summary, "record_log");
        log_bytes += json_integer_value(json_object_get(rl, "bytes"));
        log_dropped += json_integer_value(json_object_get(rl, "records_dropped"));
    }
    json_object_set_new(
        extra_o, "record_log",
        json_pack("{s:I, s:I, s:s}", "bytes", log_bytes, "records_dropped", log_dropped, "export_level", "records"));
    for (size_t i = 0; i < n; i++) { /* the server's view, from the part that scraped it (rank 0) */
        json_t *sm = json_object_get(parts[i].summary, "server_metrics");
        if (sm) {
            json_object_set(extra_o, "server_metrics", sm);
            break;
        }
    }
    /* how often prompts repeated over the parts: their requests summed; distinct prompts all of them with
     * --cache-bust (request ids are run-wide), else at most the table's */
    json_t *reuse = json_deep_copy(json_object_get(parts[0].summary, "prompt_reuse"));
    if (json_is_object(reuse)) {
        json_int_t sent = 0;
        for (size_t i = 0; i < n; i++)
            sent += json_integer_value(json_object_get(json_object_get(parts[i].summary, "prompt_reuse"), "requests"));
        json_object_set_new(reuse, "requests", json_integer(sent));
        const char *bust = json_string_value(json_object_get(reuse, "cache_bust"));
        const json_t *table = json_object_get(reuse, "table_prompts");
        if (bust && strcmp(bust, "first_turn_prefix") == 0)
            json_object_set_new(reuse, "distinct_prompts", json_integer(sent));
        else if (json_is_integer(table))
            json_object_set_new(reuse, "distinct_prompts",
                                json_integer(sent < json_integer_value(table) ? sent : json_integer_value(table)));
        sg_prompt_reuse_fill(reuse);
        reuse_text = json_dumps(reuse, JSON_COMPACT);
    }
    json_decref(reuse);
    media_text = merge_media(parts, n);
    if (mg->extra_json) {
        json_t *e = json_loads(mg->extra_json, 0, NULL);
        if (json_is_object(e))
            json_object_update(extra_o, e);
        json_decref(e);
    }
    double duration = sg_metrics_duration_s(sink.m);
    sg_slo_verdict_t verdicts[SG_SLO_MAX];
    /* the level the runs were given (a run's input_config from before the flag existed: the default) */
    double level = num_at(cfg, "confidence_level", NULL);
    sg_slo_eval(checks, n_checks, sink.m, duration, level > 0.5 && level < 1 ? level : 0.95, verdicts);
    bool streaming =
        json_is_true(json_object_get(cfg, "streaming")) || json_object_get(parts[0].summary, "time_to_first_token");
    const char *isl_source = json_string_value(json_object_get(parts[0].summary, "isl_source"));
    const char *tokenizer = json_string_value(json_object_get(parts[0].summary, "tokenizer"));
    /* several URLs: their names from the first run's configuration; the per-URL metrics come back from the records,
     * and what the parts' workers saw of each URL is summed from their summaries' "urls" (failed connects, re-routed
     * requests, outages), on the one clock (a rank's start is the run's): the first outage, the last recovery, and
     * out at the end when some part still had it out */
    const char *url_names[8];
    size_t n_url_names = 0;
    json_t *urls = json_object_get(cfg, "urls");
    for (size_t i = 0; json_is_array(urls) && i < json_array_size(urls) && n_url_names < 8; i++)
        url_names[n_url_names++] = json_string_value(json_array_get(urls, i));
    sg_url_info_t url_info[8];
    bool url_seen = false, down_seen[8] = {false};
    for (size_t u = 0; u < 8; u++)
        url_info[u] = (sg_url_info_t){.first_down_s = -1, .last_up_s = -1};
    for (size_t i = 0; i < n; i++) {
        json_t *pu = json_object_get(parts[i].summary, "urls");
        size_t k;
        json_t *o;
        json_array_foreach(pu, k, o)
        {
            json_t *idx = json_object_get(o, "index");
            if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) >= 8 ||
                !json_object_get(o, "outages"))
                continue;
            size_t ui = (size_t)json_integer_value(idx);
            sg_url_info_t *x = &url_info[ui];
            url_seen = true;
            x->connect_failures += (uint64_t)num_at(o, "connect_failures", NULL);
            x->rerouted += (uint64_t)num_at(o, "rerouted_request_count", NULL);
            x->outages += (uint64_t)num_at(o, "outages", NULL);
            json_t *d = json_object_get(o, "first_down_s"), *up = json_object_get(o, "last_up_s");
            if (json_is_number(d) && (!down_seen[ui] || json_number_value(d) < x->first_down_s)) {
                x->first_down_s = json_number_value(d);
                down_seen[ui] = true;
            }
            if (json_is_number(up) && json_number_value(up) > x->last_up_s)
                x->last_up_s = json_number_value(up);
            x->down_at_end |= json_is_true(json_object_get(o, "down_at_end"));
        }
    }
    sg_run_info_t info = {
        .title = "surge | LLM Metrics (merged)",
        .streaming = streaming,
        .interrupted = interrupted,
        .warmup_count = warmup,
        .input_config_json = input,
        .has_slos = n_slos > 0,
        .show_trace_timing = json_is_true(json_object_get(cfg, "show_trace_timing")),
        .url_names = url_names,
        .n_url_names = n_url_names,
        .url_info = url_seen ? url_info : NULL,
        .client_cpu_s = cpu,
        .client_cpu_user_s = split_known[0] ? cpu_split[0] : 0,
        .client_cpu_sys_s = split_known[0] ? cpu_split[1] : 0,
        .process_cpu_user_s = split_known[1] ? cpu_split[2] : 0,
        .process_cpu_sys_s = split_known[1] ? cpu_split[3] : 0,
        .stall_threshold_ms = stall_threshold,
        .stalls = stalls,
        .n_stalls = n_stalls,
        .stalls_dropped = stalls_dropped,
        .unreach = unreach,
        .n_unreach = n_unreach,
        .io_backend = mixed ? "mixed" : backend,
        .timestamp_source = stamps_known ? sg_timestamp_source(stamps_asked, stamped, unstamped) : NULL,
        .coalesce_method = wake_method,
        .coalesce_us = wake_us,
        .loop_turns = wake_turns,
        .loop_waits = wake_waits,
        .loop_completions = wake_completions,
        .loop_coalesced = wake_coalesced,
        .loop_coalesced_ns = wake_coalesced_ns,
        .rx_stamped = stamped,
        .rx_unstamped = unstamped,
        .stamp_refused = refused,
        .clock_steps = steps,
        .events_shared = shared,
        .clock_step_max_ns = (int64_t)(step_max_ms * 1e6),
        .tokenizer = tokenizer,
        .isl_source = isl_source,
        .silent_closes = silent,
        .no_reuse_after_whole = reuse_whole,
        .no_reuse_after_stream = reuse_stream,
        .slo_checks = checks,
        .slo_verdicts = verdicts,
        .n_slo_checks = n_checks,
        .resent_count = resent,
        .wall_offset_ns = parts[0].start_realtime_ns ? parts[0].start_realtime_ns - MERGE_T0 : 0,
        /* rank 0's: the ranks ran one command line, on their own hosts (merged_from lists each) */
        .command = json_string_value(json_object_get(parts[0].summary, "command")),
        .host = json_string_value(json_object_get(parts[0].summary, "host")),
        .prompt_reuse_json = reuse_text,
        .media_json = media_text,
    };

    /* the files, the summary last (its presence says the others are complete) */
    if (!(stem = stem_of(cfg)))
        goto oom;
    p_sjson = join3(mg->out_dir, stem, "_surge.json");
    p_scsv = join3(mg->out_dir, stem, "_surge.csv");
    p_sjsonl = join3(mg->out_dir, stem, "_surge.jsonl");
    p_ajson = join3(mg->out_dir, stem, "_aiperf.json");
    p_acsv = join3(mg->out_dir, stem, "_aiperf.csv");
    p_ajsonl = join3(mg->out_dir, stem, ".jsonl");
    if (!p_sjson || !p_scsv || !p_sjsonl || !p_ajson || !p_acsv || !p_ajsonl)
        goto oom;
    int64_t base = 0;
    sg_records_out_t recs = {
        .surge_path = p_sjsonl,
        .aiperf_path = p_ajsonl,
        .model_names = (const char *const *)sink.models,
        .n_models = sink.n_models,
        .wall_offset_ns = info.wall_offset_ns,
        .base_out = &base,
    };
    const char *logs[1] = {log_path};
    int xerr = sg_export_records(&recs, logs, 1);
    double slice_s = num_at(cfg, "slice_duration", NULL);
    if (!xerr && slice_s > 0) {
        char *sj = join3(mg->out_dir, stem, "_surge_timeslices.json");
        char *sc = join3(mg->out_dir, stem, "_surge_timeslices.csv");
        xerr = sj && sc ? sg_export_timeslices(sj, sc, logs, 1, slice_s, slos, n_slos, &info) : -ENOMEM;
        free(sj);
        free(sc);
    }
    json_object_set_new(clock, "records_origin_ns", json_integer(base ? (json_int_t)(base - MERGE_T0) : 0));
    if (!(extra = json_dumps(extra_o, JSON_COMPACT)))
        goto oom;
    info.extra_json = extra;
    if (!mg->quiet) {
        sg_export_table(stdout, sink.m, &info);
        fflush(stdout);
    }
    xerr = xerr ? xerr : sg_export_csv(p_scsv, sink.m, &info);
    xerr = xerr ? xerr : sg_export_aiperf_csv(p_acsv, sink.m, &info);
    xerr = xerr ? xerr : sg_export_aiperf_json(p_ajson, sink.m, &info);
    xerr = xerr ? xerr : sg_export_json(p_sjson, sink.m, &info);
    if (xerr < 0) {
        snprintf(err, errlen, "writing the merged files in %s: %s", mg->out_dir, sg_strerror(xerr));
        goto out;
    }

    /* the exit status a single run with these results would have */
    uint64_t ok = sg_metrics_ok(sink.m), failed = sg_metrics_errors(sink.m);
    double max_error_rate = num_at(cfg, "max_error_rate", NULL);
    if (interrupted)
        code = SG_MERGE_INTERRUPTED;
    else if (ok + failed == 0 || (failed > 0 && (double)failed > max_error_rate * (double)(ok + failed)))
        code = SG_MERGE_REQUEST_ERRORS;
    else if (n_checks && sg_slo_overall(verdicts, n_checks) == SG_SLO_FAIL)
        code = SG_MERGE_SLO_FAILED;
    else if (n_checks && sg_slo_overall(verdicts, n_checks) == SG_SLO_INCONCLUSIVE)
        code = SG_MERGE_SLO_INCONCLUSIVE;
    else
        code = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    code = -1;
out:
    if (log_path)
        unlink(log_path);
    free(log_path);
    for (size_t i = 0; parts && i < n; i++) {
        json_decref(parts[i].summary);
        free(parts[i].jsonl);
    }
    free(parts);
    for (size_t i = 0; i < sink.n_models; i++)
        free(sink.models[i]);
    free(sink.models);
    sg_metrics_free(sink.m);
    json_decref(cfg_out);
    json_decref(extra_o);
    free(stalls);
    free(unreach);
    free(input);
    free(extra);
    free(reuse_text);
    free(media_text);
    free(stem);
    free(p_sjson);
    free(p_scsv);
    free(p_sjsonl);
    free(p_ajson);
    free(p_acsv);
    free(p_ajsonl);
    return code;
}

static void merge_usage(FILE *out)
{
    fputs("usage: surge merge DIR... -o OUT [-q]\n"
          "\n"
          "Merge the artifact directories of several parts of one run (the ranks of a multi-process run,\n"
          "collected by hand, or runs of the same configuration started together) into OUT, as one run's\n"
          "files: the per-request JSONL in intended-time order, metrics from every request (exact, as one\n"
          "process would have measured them), throughput over the global window, errors and re-sends summed,\n"
          "SLOs judged again. Each DIR holds one run's profile_export_surge.json and .jsonl.\n"
          "\n"
          "  -o, --output OUT   the merged run's directory (created). An OUT that holds an earlier run is\n"
          "                     left as it is: the merge goes to OUT-2 (OUT-3, ...) and says so\n"
          "      --overwrite    replace the earlier run in OUT instead (its files of surge's are removed first)\n"
          "  -q, --quiet        no metrics table on stdout\n"
          "  -h, --help         this help\n"
          "\n"
          "Exit status: 0; 1 when more requests failed than the run's --max-error-rate allows (or none ran);\n"
          "2 for bad input; 4 when an --slo fails; 130 when a part was interrupted.\n",
          out);
}

int sg_merge_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"overwrite", no_argument, NULL, 'O'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sg_merge_t mg = {0};
    bool overwrite = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            mg.out_dir = optarg;
            break;
        case 'O':
            overwrite = true;
            break;
        case 'q':
            mg.quiet = true;
            break;
        case 'h':
            merge_usage(stdout);
            return 0;
        default:
            fprintf(stderr, "surge merge: %s: unknown option or missing value (surge merge --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (!mg.out_dir) {
        fprintf(stderr, "surge merge: -o OUT is required: the directory the merged run goes to\n");
        return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "surge merge: no directories to merge (surge merge DIR... -o OUT)\n");
        return 2;
    }
    mg.dirs = (const char *const *)argv + optind;
    mg.n_dirs = (size_t)(argc - optind);
    for (size_t i = 0; i < mg.n_dirs; i++) {
        char a[4096], b[4096];
        if (realpath(mg.dirs[i], a) && realpath(mg.out_dir, b) && strcmp(a, b) == 0) {
            fprintf(stderr, "surge merge: -o %s is one of the directories to merge: give another\n", mg.out_dir);
            return 2;
        }
    }
    char err[1024];
    /* never into an earlier run's files: OUT-2, or with --overwrite that run's files gone first */
    char *out_dir = NULL;
    if (sg_artdir_claim("surge merge", mg.out_dir, overwrite, &out_dir, err, sizeof err) < 0) {
        fprintf(stderr, "surge merge: -o %s\n", err);
        return 2;
    }
    mg.out_dir = out_dir;
    int code = sg_merge_run(&mg, err, sizeof err);
    if (code < 0)
        fprintf(stderr, "surge merge: %s\n", err);
    else if (!mg.quiet)
        fprintf(stderr, "surge merge: %zu runs merged into %s/\n", mg.n_dirs, mg.out_dir);
    if (code == SG_MERGE_INTERRUPTED)
        fprintf(stderr, "surge merge: a part was INTERRUPTED: the results cover what it completed\n");
    free(out_dir);
    return code < 0 ? 2 : code;
}
