/* The workload: exact word counts, distinct and reproducible prompts, bodies and HTTP bytes as sent. */
#define _GNU_SOURCE /* memmem */
#include "test.h"

#include "sg_workload.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The vocabulary sorted once, so that checking a million words stays quick under the sanitizers. */
static const char **sorted_vocab;

static bool in_vocab(const char *w, size_t len)
{
    if (!sorted_vocab) {
        sorted_vocab = malloc(sg_vocab_size() * sizeof *sorted_vocab);
        for (size_t i = 0; i < sg_vocab_size(); i++)
            sorted_vocab[i] = sg_vocab_word(i);
        qsort(sorted_vocab, sg_vocab_size(), sizeof *sorted_vocab, cmp_str);
    }
    char key[64];
    if (len >= sizeof key)
        return false;
    memcpy(key, w, len);
    key[len] = '\0';
    const char *k = key;
    return bsearch(&k, sorted_vocab, sg_vocab_size(), sizeof *sorted_vocab, cmp_str) != NULL;
}

/* Every word of s is a vocabulary word, separated by exactly one space. */
static bool all_vocab_words(const char *s)
{
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (n == 0 || !in_vocab(p, n))
            return false;
        p += n;
        if (*p == ' ') {
            p++;
            if (!*p)
                return false; /* trailing space */
        }
    }
    return true;
}

static void test_vocab(void)
{
    size_t n = sg_vocab_size();
    CHECK(n >= 300);
    CHECK(sg_vocab_word(n) == NULL);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        const char *w = sg_vocab_word(i);
        if (!w || !*w)
            ok = false;
        for (const char *p = w; p && *p; p++)
            if (*p < 'a' || *p > 'z')
                ok = false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(w, sg_vocab_word(j)) == 0) {
                fprintf(stderr, "duplicate vocabulary word \"%s\"\n", w);
                ok = false;
            }
    }
    CHECK(ok);
}

static void test_count_words(void)
{
    CHECK_EQ_INT(sg_count_words("", 0), 0);
    CHECK_EQ_INT(sg_count_words("   \t\r\n", 6), 0);
    CHECK_EQ_INT(sg_count_words("one", 3), 1);
    CHECK_EQ_INT(sg_count_words("  a  b\tc\nd\re  ", 14), 5);
    CHECK_EQ_INT(sg_count_words("a b c", 3), 2); /* only len bytes count */
}

static void test_synth_text(void)
{
    sg_rng_t r;
    sg_rng_seed(&r, 7, 0);
    uint32_t sizes[] = {0, 1, 2, 3, 7, 100, 5000};
    for (size_t i = 0; i < SG_ARRAY_LEN(sizes); i++) {
        char *t = sg_synth_text(&r, sizes[i]);
        CHECK(t != NULL);
        if (!t)
            continue;
        CHECK_EQ_INT(sg_count_words(t, strlen(t)), sizes[i]);
        CHECK(all_vocab_words(t));
        free(t);
    }
    char *a = sg_synth_text(&r, 50), *b = sg_synth_text(&r, 50);
    CHECK(a && b && strcmp(a, b) != 0);
    free(a);
    free(b);

    /* same seed and stream, same text */
    sg_rng_t r1, r2;
    sg_rng_seed(&r1, 99, 3);
    sg_rng_seed(&r2, 99, 3);
    a = sg_synth_text(&r1, 40);
    b = sg_synth_text(&r2, 40);
    CHECK(a && b && strcmp(a, b) == 0);
    free(a);
    free(b);

    /* prompts: exact count, vocabulary words, index words first */
    sg_rng_seed(&r, 1, 1);
    size_t v = sg_vocab_size();
    uint64_t index = 5 + 7 * v + 11 * v * v;
    char *p = sg_synth_prompt(&r, 10, index);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(sg_count_words(p, strlen(p)), 10);
        CHECK(all_vocab_words(p));
        char want[128];
        snprintf(want, sizeof want, "%s %s %s ", sg_vocab_word(5), sg_vocab_word(7), sg_vocab_word(11));
        CHECK(strncmp(p, want, strlen(want)) == 0);
        free(p);
    }
    p = sg_synth_prompt(&r, 1, 3);
    CHECK(p && strcmp(p, sg_vocab_word(3)) == 0);
    free(p);
    p = sg_synth_prompt(&r, 0, 3);
    CHECK(p && strcmp(p, "") == 0);
    free(p);
    /* an index past vocab^3 takes a fourth word and stays distinct */
    p = sg_synth_prompt(&r, 4, (uint64_t)v * v * v + 2);
    CHECK(p != NULL);
    if (p) {
        char want[128];
        snprintf(want, sizeof want, "%s %s %s %s", sg_vocab_word(2), sg_vocab_word(0), sg_vocab_word(0),
                 sg_vocab_word(1));
        CHECK_EQ_STR(p, strlen(p), want);
        free(p);
    }
}

/* ---------- the payload table ---------- */

typedef struct {
    const char *head;
    size_t head_len;
    const char *body;
    size_t body_len;
    long content_length;
} http_req_t;

static bool split_request(const sg_payload_t *p, http_req_t *out)
{
    const char *end = NULL;
    for (size_t i = 0; i + 4 <= p->len; i++)
        if (memcmp(p->bytes + i, "\r\n\r\n", 4) == 0) {
            end = p->bytes + i;
            break;
        }
    if (!end)
        return false;
    out->head = p->bytes;
    out->head_len = (size_t)(end - p->bytes) + 4;
    out->body = end + 4;
    out->body_len = p->len - out->head_len;
    out->content_length = -1;
    /* the bytes are not NUL-terminated: search only the head */
    const char *cl = memmem(p->bytes, out->head_len, "\r\nContent-Length: ", 18);
    if (cl)
        out->content_length = strtol(cl + 18, NULL, 10);
    return true;
}

static bool head_has(const http_req_t *r, const char *line)
{
    size_t n = strlen(line);
    for (size_t i = 0; i + n <= r->head_len; i++)
        if (memcmp(r->head + i, line, n) == 0)
            return true;
    return false;
}

static void test_build_chat_streaming(void)
{
    const char *models[] = {"org/model-a", "model \"b\""};
    const char *headers[] = {"X-Run: 1", "Authorization: Bearer k", NULL};
    sg_workload_spec_t spec = {
        .host_header = "127.0.0.1:8000",
        .path = "/v1/chat/completions",
        .headers = headers,
        .kind = SG_OAI_CHAT,
        .models = models,
        .n_models = 2,
        .model_strategy = 0,
        .streaming = true,
        .extra_inputs_json =
            "{\"temperature\":0,\"stream_options\":{\"include_usage\":true,\"x\":1},\"ignore_eos\":true}",
        .num_prompts = 2000,
        .isl_mean = 550,
        .isl_stddev = 50,
        .osl_mean = 100,
        .osl_stddev = 10,
        .seed = 123,
    };
    sg_payload_table_t t;
    char err[256];
    int rc = sg_workload_build(&spec, &t, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "build: %s\n", err);
        return;
    }
    /* 2000 prompts, each rendered for both models */
    CHECK_EQ_INT(t.n_entries, 2000);
    CHECK_EQ_INT(t.n_variants, 2);
    CHECK_EQ_INT(t.n, 4000);
    double isl_sum = 0, isl_sq = 0, osl_sum = 0, osl_sq = 0;
    char **prompts = calloc(t.n, sizeof *prompts);
    bool http_ok = true, json_ok = true, fields_ok = true, counts_ok = true;
    for (size_t i = 0; i < t.n; i++) {
        const sg_payload_t *p = &t.items[i];
        isl_sum += p->isl;
        isl_sq += (double)p->isl * p->isl;
        osl_sum += p->max_tokens;
        osl_sq += (double)p->max_tokens * p->max_tokens;
        CHECK_EQ_INT(p->model, i % 2);
        http_req_t r;
        if (!split_request(p, &r) || r.content_length != (long)r.body_len ||
            strncmp(p->bytes, "POST /v1/chat/completions HTTP/1.1\r\n", 36) != 0 ||
            !head_has(&r, "\r\nHost: 127.0.0.1:8000\r\n") || !head_has(&r, "\r\nContent-Type: application/json\r\n") ||
            !head_has(&r, "\r\nAccept: text/event-stream\r\n") || !head_has(&r, "\r\nX-Run: 1\r\n") ||
            !head_has(&r, "\r\nAuthorization: Bearer k\r\n")) {
            http_ok = false;
            continue;
        }
        size_t body_len = 0;
        if (sg_payload_body(p, &body_len) != r.body || body_len != r.body_len)
            http_ok = false;
        json_error_t je;
        json_t *b = json_loadb(r.body, r.body_len, 0, &je);
        if (!b || !json_is_object(b)) {
            json_ok = false;
            json_decref(b);
            continue;
        }
        json_t *msgs = json_object_get(b, "messages");
        json_t *m0 = json_array_get(msgs, 0);
        const char *content = json_string_value(json_object_get(m0, "content"));
        json_t *so = json_object_get(b, "stream_options");
        if (strcmp(json_string_value(json_object_get(b, "model")), models[p->model]) != 0 ||
            json_array_size(msgs) != 1 || strcmp(json_string_value(json_object_get(m0, "role")), "user") != 0 ||
            !content || !json_is_true(json_object_get(b, "stream")) ||
            json_integer_value(json_object_get(b, "max_tokens")) != p->max_tokens ||
            !json_is_true(json_object_get(so, "include_usage")) ||
            json_integer_value(json_object_get(so, "x")) != 1 || /* the extra object replaced ours */
            !json_is_integer(json_object_get(b, "temperature")) || !json_is_true(json_object_get(b, "ignore_eos")))
            fields_ok = false;
        if (content) {
            if (sg_count_words(content, strlen(content)) != p->isl || !all_vocab_words(content))
                counts_ok = false;
            /* the variants of one entry are the same prompt for another model */
            if (i % 2 == 0)
                prompts[i / 2] = strdup(content);
            else if (!prompts[i / 2] || strcmp(prompts[i / 2], content) != 0 || t.items[i - 1].isl != p->isl ||
                     t.items[i - 1].max_tokens != p->max_tokens)
                fields_ok = false;
        }
        /* the body on the wire is compact */
        if (memchr(r.body, '\n', r.body_len) || memmem(r.body, r.body_len, "\": ", 3))
            json_ok = false;
        json_decref(b);
    }
    CHECK(http_ok);
    CHECK(json_ok);
    CHECK(fields_ok);
    CHECK(counts_ok);
    double n = (double)t.n;
    double isl_mean = isl_sum / n, isl_sd = sqrt(isl_sq / n - isl_mean * isl_mean);
    double osl_mean = osl_sum / n, osl_sd = sqrt(osl_sq / n - osl_mean * osl_mean);
    /* standard error of the mean is 50/sqrt(2000) ~ 1.1; of the stddev ~ 0.8 */
    CHECK_NEAR(isl_mean, 550, 5);
    CHECK_NEAR(isl_sd, 50, 4);
    CHECK_NEAR(osl_mean, 100, 1);
    CHECK_NEAR(osl_sd, 10, 1);

    /* all distinct */
    bool have_all = true;
    for (size_t i = 0; i < t.n_entries; i++)
        if (!prompts[i])
            have_all = false;
    CHECK(have_all);
    if (have_all) {
        qsort(prompts, t.n_entries, sizeof *prompts, cmp_str);
        size_t dups = 0;
        for (size_t i = 1; i < t.n_entries; i++)
            if (strcmp(prompts[i - 1], prompts[i]) == 0)
                dups++;
        CHECK_EQ_INT(dups, 0);
    }
    for (size_t i = 0; i < t.n; i++)
        free(prompts[i]);
    free(prompts);

    /* same seed, same bytes; another seed, other prompts */
    sg_payload_table_t t2;
    CHECK_EQ_INT(sg_workload_build(&spec, &t2, err, sizeof err), 0);
    bool same = t2.n == t.n;
    for (size_t i = 0; same && i < t.n; i++)
        same = t.items[i].len == t2.items[i].len && memcmp(t.items[i].bytes, t2.items[i].bytes, t.items[i].len) == 0 &&
               t.items[i].isl == t2.items[i].isl && t.items[i].max_tokens == t2.items[i].max_tokens;
    CHECK(same);
    sg_workload_free(&t2);
    spec.seed = 124;
    CHECK_EQ_INT(sg_workload_build(&spec, &t2, err, sizeof err), 0);
    size_t differ = 0;
    for (size_t i = 0; i < t.n && i < t2.n; i++)
        if (t.items[i].len != t2.items[i].len || memcmp(t.items[i].bytes, t2.items[i].bytes, t.items[i].len) != 0)
            differ++;
    CHECK_EQ_INT(differ, t.n);
    sg_workload_free(&t2);
    sg_workload_free(&t);
    CHECK(t.items == NULL && t.n == 0);
}

static void test_build_completions(void)
{
    const char *models[] = {"a", "b", "c"};
    sg_workload_spec_t spec = {
        .host_header = "[::1]:9000",
        .path = "/base/v1/completions",
        .kind = SG_OAI_COMPLETIONS,
        .models = models,
        .n_models = 3,
        .model_strategy = 1,
        .streaming = false,
        .extra_inputs_json = "{\"stream\":true,\"prompt_extra\":[1,2]}",
        .num_prompts = 300,
        .isl_mean = 2,
        .isl_stddev = 10, /* draws far below 1 are clamped */
        .osl_mean = -1,
        .seed = 5,
    };
    sg_payload_table_t t;
    char err[256];
    int rc = sg_workload_build(&spec, &t, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        return;
    size_t per_model[3] = {0, 0, 0};
    bool ok = true;
    uint32_t min_isl = UINT32_MAX;
    for (size_t i = 0; i < t.n; i++) {
        const sg_payload_t *p = &t.items[i];
        if (p->isl < min_isl)
            min_isl = p->isl;
        if (p->model < 3)
            per_model[p->model]++;
        http_req_t r;
        if (!split_request(p, &r) || r.content_length != (long)r.body_len ||
            strncmp(p->bytes, "POST /base/v1/completions HTTP/1.1\r\n", 36) != 0 ||
            !head_has(&r, "\r\nHost: [::1]:9000\r\n") || !head_has(&r, "\r\nAccept: application/json\r\n") ||
            p->max_tokens != 0) {
            ok = false;
            continue;
        }
        json_t *b = json_loadb(r.body, r.body_len, 0, NULL);
        const char *prompt = json_string_value(json_object_get(b, "prompt"));
        if (!b || !prompt || sg_count_words(prompt, strlen(prompt)) != p->isl || json_object_get(b, "messages") ||
            json_object_get(b, "max_tokens") || json_object_get(b, "stream_options") ||
            !json_is_true(json_object_get(b, "stream")) || /* extra inputs override ours */
            json_array_size(json_object_get(b, "prompt_extra")) != 2 ||
            strcmp(json_string_value(json_object_get(b, "model")), models[p->model]) != 0)
            ok = false;
        json_decref(b);
    }
    CHECK(ok);
    CHECK_EQ_INT(min_isl, 1);
    /* every prompt rendered for each of the 3 models; the choice is made per request (sg_payload_pick) */
    CHECK_EQ_INT(t.n_variants, 3);
    for (int m = 0; m < 3; m++)
        CHECK_EQ_INT(per_model[m], 300);
    /* random strategy: each of 3 models near 1000 of 3000 requests, and the same for the same (seed, id) */
    size_t picked[3] = {0, 0, 0};
    bool stable = true;
    for (uint64_t id = 0; id < 3000; id++) {
        uint32_t idx, idx2;
        const sg_payload_t *p = sg_payload_pick(&t, id, 1, 5, &idx);
        stable &= sg_payload_pick(&t, id, 1, 5, &idx2) == p && idx == idx2 && idx / 3 == id % 300;
        picked[p->model]++;
    }
    CHECK(stable);
    for (int m = 0; m < 3; m++)
        CHECK(picked[m] > 900 && picked[m] < 1100);
    /* round robin: request id goes to model id % 3, entry id % 300, whatever the table size */
    bool rr = true;
    for (uint64_t id = 0; id < 3000; id++) {
        uint32_t idx;
        const sg_payload_t *p = sg_payload_pick(&t, id, 0, 5, &idx);
        rr &= p->model == id % 3 && idx == (id % 300) * 3 + id % 3;
    }
    CHECK(rr);
    sg_workload_free(&t);

    /* osl stddev 0: exactly the mean; osl 1 */
    spec.osl_mean = 1;
    spec.osl_stddev = 0;
    spec.num_prompts = 50;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    ok = t.n == 150;
    for (size_t i = 0; i < t.n; i++)
        if (t.items[i].max_tokens != 1)
            ok = false;
    CHECK(ok);
    sg_workload_free(&t);

    /* no extra inputs at all */
    spec.extra_inputs_json = NULL;
    CHECK_EQ_INT(sg_workload_build(&spec, &t, err, sizeof err), 0);
    sg_workload_free(&t);
}

static void test_build_errors(void)
{
    const char *models[] = {"m"};
    sg_workload_spec_t base = {
        .host_header = "h:1",
        .path = "/v1/chat/completions",
        .kind = SG_OAI_CHAT,
        .models = models,
        .n_models = 1,
        .extra_inputs_json = "{}",
        .num_prompts = 3,
        .isl_mean = 5,
        .osl_mean = -1,
    };
    sg_payload_table_t t;
    char err[256];
    sg_workload_spec_t s = base;
    CHECK_EQ_INT(sg_workload_build(&s, &t, err, sizeof err), 0);
    sg_workload_free(&t);

    s = base;
    s.num_prompts = 0;
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0' && t.items == NULL && t.n == 0);

    s = base;
    s.n_models = 0;
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0');

    s = base;
    s.extra_inputs_json = "[1,2]";
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0');

    s = base;
    s.extra_inputs_json = "{not json";
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0');

    const char *bad_headers[] = {"X-A: 1\r\nX-B: 2", NULL};
    s = base;
    s.headers = bad_headers;
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0' && t.items == NULL);

    s = base;
    s.path = "no-slash";
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0');

    const char *bad_model[] = {"\xff\xfe"};
    s = base;
    s.models = bad_model;
    err[0] = '\0';
    CHECK(sg_workload_build(&s, &t, err, sizeof err) < 0);
    CHECK(err[0] != '\0');
}

/* AIPerf's --rankings-*: passages per query and the query's and passages' lengths, each drawn on its own. */
static void test_build_rankings_synthetic(void)
{
    const char *models[] = {"m"};
    sg_workload_spec_t spec = {
        .host_header = "h:1",
        .path = "/v1/rerank",
        .kind = SG_OAI_RANK_COHERE,
        .models = models,
        .n_models = 1,
        .extra_inputs_json = "{}",
        .num_prompts = 400,
        .isl_mean = 100, /* not used by the parts */
        .osl_mean = -1,
        .seed = 9,
        .rankings = {.on = true,
                     .passages_mean = 6,
                     .passages_stddev = 2,
                     .query_mean = 16,
                     .query_stddev = 4,
                     .passage_mean = 32,
                     .passage_stddev = 8},
    };
    for (int fixed = 0; fixed < 2; fixed++) {
        if (fixed)
            spec.rankings.passages_stddev = 0, spec.rankings.query_stddev = 0, spec.rankings.passage_stddev = 0;
        sg_payload_table_t t;
        char err[256];
        int rc = sg_workload_build(&spec, &t, err, sizeof err);
        CHECK_EQ_INT(rc, 0);
        if (rc)
            return;
        double n_sum = 0, n_sq = 0, q_sum = 0, d_sum = 0;
        size_t docs = 0, bad = 0;
        uint32_t n_min = UINT32_MAX, n_max = 0;
        for (size_t i = 0; i < t.n; i++) {
            const sg_payload_t *p = &t.items[i];
            size_t blen;
            const char *body = sg_payload_body(p, &blen);
            json_t *j = body ? json_loadb(body, blen, 0, NULL) : NULL;
            json_t *q = json_object_get(j, "query"), *d = json_object_get(j, "documents");
            if (!json_is_string(q) || !json_is_array(d) || json_array_size(d) != p->inputs) {
                bad++;
                json_decref(j);
                continue;
            }
            const char *qs = json_string_value(q);
            uint32_t words = (uint32_t)sg_count_words(qs, strlen(qs));
            q_sum += words;
            for (size_t k = 0; k < json_array_size(d); k++) {
                const char *ds = json_string_value(json_array_get(d, k));
                uint32_t w = ds ? (uint32_t)sg_count_words(ds, strlen(ds)) : 0;
                d_sum += w;
                words += w;
                docs++;
            }
            bad += words != p->isl; /* ISL: the query and every passage */
            n_sum += p->inputs;
            n_sq += (double)p->inputs * p->inputs;
            n_min = p->inputs < n_min ? p->inputs : n_min;
            n_max = p->inputs > n_max ? p->inputs : n_max;
            json_decref(j);
        }
        CHECK_EQ_INT((long long)bad, 0);
        double n = (double)t.n, mean = n_sum / n, sd = sqrt(n_sq / n - mean * mean);
        if (fixed) {
            CHECK(n_min == 6 && n_max == 6 && q_sum == 16 * n && d_sum == 32.0 * (double)docs);
        } else {
            CHECK(fabs(mean - 6) < 0.4 && sd > 1.5 && sd < 2.5 && n_min >= 1);
            CHECK(fabs(q_sum / n - 16) < 1.0 && fabs(d_sum / (double)docs - 32) < 1.5);
        }
        sg_workload_free(&t);
    }
}

/* Request `id`'s bytes as a worker sends them: the table's, with the request's own words in the slot. */
static char *sent_bytes(const sg_payload_table_t *t, const sg_payload_t *p, uint64_t id)
{
    char *b = malloc(p->len + 1);
    memcpy(b, p->bytes, p->len);
    b[p->len] = '\0';
    if (p->uniq_len) {
        char slot[SG_UNIQ_MAX];
        sg_payload_uniq(t, p, id, slot);
        memcpy(b + p->uniq_off, slot, p->uniq_len);
    }
    return b;
}

/* The prompt of a chat body (sent_bytes), malloc'd; NULL when the body is not what was built. */
static char *chat_prompt(const char *bytes, size_t len)
{
    const char *body = memmem(bytes, len, "\r\n\r\n", 4);
    if (!body)
        return NULL;
    body += 4;
    json_t *j = json_loadb(body, len - (size_t)(body - bytes), 0, NULL);
    const char *c = json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "content"));
    char *out = c ? strdup(c) : NULL;
    json_decref(j);
    return out;
}

/*
 * --cache-bust first_turn_prefix: two requests of the same prompt differ from the prompt's first byte on, keep
 * their length (Content-Length) and their exact ISL (words here: what the mock and the estimate count), and no
 * two requests of a run share a prompt, over many more requests than prompts.
 */
static void test_cache_bust(void)
{
    const char *models[] = {"m"};
    sg_workload_spec_t spec = {
        .host_header = "127.0.0.1:8000",
        .path = "/v1/chat/completions",
        .kind = SG_OAI_CHAT,
        .models = models,
        .n_models = 1,
        .num_prompts = 7,
        .isl_mean = 40,
        .isl_stddev = 30,
        .osl_mean = -1,
        .seed = 5,
        .cache_bust = true,
    };
    sg_payload_table_t t;
    char err[256];
    int rc = sg_workload_build(&spec, &t, err, sizeof err);
    CHECK_EQ_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "build: %s\n", err);
        return;
    }
    CHECK(t.uniq.n >= 16);
    for (size_t i = 0; i < t.n; i++) {
        const sg_payload_t *p = &t.items[i];
        CHECK(p->uniq_len > 0);
        CHECK(p->uniq_words >= 1 && p->uniq_words <= SG_UNIQ_WORDS_MAX);
        /* request i and request i + 7 * n (the same prompt) */
        char *a = sent_bytes(&t, p, i), *b = sent_bytes(&t, p, i + 7 * (uint64_t)t.uniq.n + 7);
        size_t d = 0;
        while (d < p->len && a[d] == b[d])
            d++;
        const char *body = memmem(a, p->len, "\"content\":\"", 11);
        CHECK(body != NULL);
        if (body) /* the first byte that differs is in the prompt's first word */
            CHECK(d >= (size_t)(body + 11 - a) && d < (size_t)(body + 11 - a) + t.uniq.width);
        CHECK_EQ_INT(p->uniq_off, (size_t)(body + 11 - a));
        char *pa = chat_prompt(a, p->len), *pb = chat_prompt(b, p->len);
        CHECK(pa && pb);
        if (pa && pb) {
            CHECK_EQ_INT(sg_count_words(pa, strlen(pa)), p->isl);
            CHECK_EQ_INT(sg_count_words(pb, strlen(pb)), p->isl);
            CHECK(all_vocab_words(pa) && all_vocab_words(pb));
            CHECK(strcmp(pa, pb) != 0);
        }
        free(pa);
        free(pb);
        free(a);
        free(b);
    }
    /* 5000 requests over 7 prompts: 5000 distinct prompts (ISL >= 5 keeps the slot whole) */
    json_t *seen = json_object();
    size_t distinct = 0, measured = 0;
    for (uint64_t id = 0; id < 5000; id++) {
        const sg_payload_t *p = sg_payload_pick(&t, id, 0, 5, NULL);
        if (p->isl < p->uniq_words || p->uniq_words < 5)
            continue;
        measured++;
        char *a = sent_bytes(&t, p, id);
        char *pa = chat_prompt(a, p->len);
        if (pa && !json_object_get(seen, pa)) {
            json_object_set_new(seen, pa, json_true());
            distinct++;
        }
        free(pa);
        free(a);
    }
    CHECK(measured > 1000);
    CHECK_EQ_INT(distinct, measured);
    json_decref(seen);
    sg_workload_free(&t);

    /* reuse the run asks for is refused with a message, not silently dropped */
    spec.num_prefix = 2;
    spec.prefix_len = 5;
    CHECK(sg_workload_build(&spec, &t, err, sizeof err) < 0);
    CHECK(strstr(err, "--num-prefix-prompts") != NULL);
}

int main(void)
{
    test_cache_bust();
    test_build_rankings_synthetic();
    test_vocab();
    test_count_words();
    test_synth_text();
    test_build_chat_streaming();
    test_build_completions();
    test_build_errors();
    free(sorted_vocab);
    return test_finish("test_workload");
}
