/*
 * Record log v2: output text round trip and the post-run OSL pass (sg_reclog_finalize) with a counting
 * function that checks it is handed exactly the text each record carried.
 */
#include "sg_metrics.h"
#include "test.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MS 1000000LL
#define T0 (7000LL * 1000 * MS)

static char dir[64];

/* What the counter expects to be handed, in log order, and what it answers. */
typedef struct {
    const char *text[16];
    size_t len[16];
    size_t n, next;
    int mismatches;
    int fail_at; /* -1: never */
} expect_t;

/* Tokens = bytes / 4 rounded up, so the count depends on every byte handed over. */
static ssize_t fake_count(void *ctx, const char *text, size_t len)
{
    expect_t *e = ctx;
    if ((int)e->next == e->fail_at)
        return SG_ENOMEM;
    if (e->next >= e->n || e->len[e->next] != len || memcmp(e->text[e->next], text, len) != 0)
        e->mismatches++;
    e->next++;
    return (ssize_t)((len + 3) / 4);
}

static sg_record_t rec(uint64_t id, int64_t at, uint32_t events, int32_t usage)
{
    static uint32_t ev[8];
    sg_record_t r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.streaming = true;
    r.intended_ns = at;
    r.sent_ns = at + MS;
    r.first_byte_ns = at + 2 * MS;
    r.first_token_ns = at + 10 * MS;
    r.second_token_ns = events >= 2 ? r.first_token_ns + MS : 0;
    r.end_ns = r.first_token_ns + 100 * MS;
    r.http_status = 200;
    r.isl = 50;
    r.isl_server = -1;
    r.isl_cached = -1;
    r.osl_server = usage;
    r.osl_tokenizer = -1;
    r.content_events = events;
    for (uint32_t i = 0; i < events && i < 8; i++)
        ev[i] = i * 1000;
    r.event_us = ev;
    r.n_events = events < 8 ? events : 8;
    sg_record_settle_osl(&r); /* as the worker does at completion: usage or events */
    return r;
}

static json_t *line_by_id(const char *path, uint64_t id)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    json_t *found = NULL;
    while (f && !found && getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (o && (uint64_t)json_integer_value(json_object_get(o, "id")) == id)
            found = o;
        else
            json_decref(o);
    }
    free(line);
    if (f)
        fclose(f);
    return found;
}

static void check_line(const char *path, uint64_t id, int64_t osl, const char *source, int64_t tok)
{
    json_t *o = line_by_id(path, id);
    CHECK(o != NULL);
    if (!o)
        return;
    CHECK_EQ_INT(json_integer_value(json_object_get(o, "output_sequence_length")), osl);
    const char *s = json_string_value(json_object_get(o, "osl_source"));
    CHECK(s && strcmp(s, source) == 0);
    json_t *t = json_object_get(o, "output_sequence_length_tokenizer");
    if (tok < 0)
        CHECK(json_is_null(t));
    else
        CHECK_EQ_INT(json_integer_value(t), tok);
    json_decref(o);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc(*len + 1);
    if (p && fread(p, 1, *len, f) != *len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

static void write_all(const char *path, const char *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(fwrite(p, 1, len, f), len);
        fclose(f);
    }
}

static void test_text_and_finalize(void)
{
    char log[128], out[128];
    snprintf(log, sizeof(log), "%s/w0.reclog", dir);
    snprintf(out, sizeof(out), "%s/out.jsonl", dir);

    /* A text longer than the log's 64 KiB buffer, with every byte value (NUL included) in it. */
    size_t big_len = 200000;
    char *big = malloc(big_len);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)(i * 7 % 256);
    static const char hello[] = "Hello, world! \xe2\x80\x94 caf\xc3\xa9";

    int err = 1;
    sg_reclog_t *l = sg_reclog_open(log, &err);
    CHECK(l != NULL);
    if (!l)
        return;
    expect_t e = {.fail_at = -1};

    /* 1: no usage, text: the tokenizer decides. */
    sg_record_t r = rec(1, T0, 5, -1);
    r.text = hello;
    r.text_len = (uint32_t)strlen(hello);
    r.has_text = true;
    CHECK_EQ_INT(r.osl_source, SG_OSL_EVENTS);
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    e.text[e.n] = hello, e.len[e.n++] = strlen(hello);
    /* 2: usage that agrees with the count (big: 50000 tokens). */
    r = rec(2, T0 + MS, 8, 50000);
    r.text = big;
    r.text_len = (uint32_t)big_len;
    r.has_text = true;
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    e.text[e.n] = big, e.len[e.n++] = big_len;
    /* 3: usage that disagrees: 9 by usage, 3 by the tokenizer ("0123456789" = 10 bytes). */
    r = rec(3, T0 + 2 * MS, 4, 9);
    r.text = "0123456789";
    r.text_len = 10;
    r.has_text = true;
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    e.text[e.n] = "0123456789", e.len[e.n++] = 10;
    /* 4: text kept but empty: 0 tokens, source tokenizer. */
    r = rec(4, T0 + 3 * MS, 0, -1);
    r.first_token_ns = r.second_token_ns = 0;
    r.text = NULL;
    r.text_len = 0;
    r.has_text = true;
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    e.text[e.n] = "", e.len[e.n++] = 0;
    /* 5: text lost (has_text false), no usage: stays on events. */
    r = rec(5, T0 + 4 * MS, 6, -1);
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    /* 6: a failed request: never counted, whatever it holds. */
    r = rec(6, T0 + 5 * MS, 2, -1);
    r.err_class = SG_ERRC_DISCONNECT;
    snprintf(r.err_msg, sizeof(r.err_msg), "cut");
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    /* 7: warmup with text: neither counted nor exported nor in the metrics. */
    r = rec(7, T0 - 100 * MS, 3, -1);
    r.warmup = true;
    r.text = "warm up";
    r.text_len = 7;
    r.has_text = true;
    CHECK_EQ_INT(sg_reclog_append(l, &r), 0);
    CHECK_EQ_INT(sg_reclog_close(l), 0);

    /* A corrupt log is refused before anything is counted or changed. */
    size_t len = 0;
    char *orig = read_all(log, &len);
    CHECK(orig != NULL);
    char bad[128];
    snprintf(bad, sizeof(bad), "%s/bad.reclog", dir);
    write_all(bad, orig, len - 3);
    sg_metrics_t *mb = sg_metrics_new(NULL, 0);
    CHECK_EQ_INT(sg_reclog_finalize(bad, fake_count, &e, mb), SG_EPROTO);
    CHECK_EQ_INT(e.next, 0);
    CHECK_EQ_INT(sg_metrics_ok(mb) + sg_metrics_errors(mb), 0);
    sg_metrics_free(mb);
    /* The counter's error is the pass's error. */
    write_all(bad, orig, len);
    e.fail_at = 1;
    CHECK_EQ_INT(sg_reclog_finalize(bad, fake_count, &e, NULL), SG_ENOMEM);
    e.fail_at = -1;
    e.next = 0;
    e.mismatches = 0;
    free(orig);

    sg_metrics_t *m = sg_metrics_new(NULL, 0);
    CHECK_EQ_INT(sg_reclog_finalize(log, fake_count, &e, m), 0);
    CHECK_EQ_INT(e.next, e.n); /* exactly the four texts, in order, byte for byte */
    CHECK_EQ_INT(e.mismatches, 0);

    CHECK_EQ_INT(sg_metrics_ok(m), 5);
    CHECK_EQ_INT(sg_metrics_errors(m), 1);
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_TOKENIZER), 2); /* 1 and 4 */
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_USAGE), 2);     /* 2 and 3 */
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_EVENTS), 1);    /* 5 */
    size_t hello_tok = (strlen(hello) + 3) / 4;
    CHECK_EQ_INT(sg_metrics_output_tokens(m), hello_tok + 50000 + 9 + 0 + 6);
    sg_len_cmp_t c;
    sg_metrics_osl_cmp(m, &c);
    CHECK_EQ_INT(c.compared, 2);
    CHECK_EQ_INT(c.differ, 1);
    CHECK_EQ_INT(c.max_abs_diff, 6);
    CHECK_EQ_INT(c.sum_diff, 6);
    /* ITL from the final OSL: record 1 spans 100 ms after its first token over hello_tok - 1 gaps; record 2
     * 100 ms over 49999; 3: over 8; 5: over 5. The histogram's max is record 1's. */
    const sg_hist_t *itl = sg_metrics_hist(m, SG_M_ITL);
    CHECK_EQ_INT(sg_hist_count(itl), 4);
    CHECK_NEAR((double)sg_hist_max(itl), 100e6 / (double)(hello_tok - 1), 100e6 / (double)(hello_tok - 1) * 0.01);
    sg_metrics_free(m);

    /* The log now holds the final values, and the JSONL shows them. */
    const char *const paths[1] = {log};
    CHECK_EQ_INT(sg_export_jsonl(out, paths, 1, NULL, 0), 0);
    check_line(out, 1, (int64_t)hello_tok, "tokenizer", (int64_t)hello_tok);
    check_line(out, 2, 50000, "usage", 50000);
    check_line(out, 3, 9, "usage", 3);
    check_line(out, 4, 0, "tokenizer", 0);
    check_line(out, 5, 6, "events", -1);
    json_t *o = line_by_id(out, 6);
    CHECK(o && json_is_null(json_object_get(o, "output_sequence_length_tokenizer")));
    json_decref(o);
    CHECK(line_by_id(out, 7) == NULL);

    /* A second pass finds the same and changes nothing (the pass can be re-run on a kept log). */
    e.next = 0;
    m = sg_metrics_new(NULL, 0);
    CHECK_EQ_INT(sg_reclog_finalize(log, fake_count, &e, m), 0);
    CHECK_EQ_INT(e.mismatches, 0);
    CHECK_EQ_INT(sg_metrics_osl_source_count(m, SG_OSL_TOKENIZER), 2);
    sg_metrics_free(m);

    /* Without a counter the pass only adds the records as they are. */
    m = sg_metrics_new(NULL, 0);
    CHECK_EQ_INT(sg_reclog_finalize(log, NULL, NULL, m), 0);
    CHECK_EQ_INT(sg_metrics_ok(m), 5);
    sg_metrics_free(m);
    free(big);
}

static void cleanup(void)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/sg_test_reclog_text.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_text_and_finalize();
    cleanup();
    return test_finish("test_reclog_text");
}
