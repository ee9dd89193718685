/*
 * Input-file parsers (workload/input.c) on arbitrary bytes. The first byte picks the format (its low bits, mod
 * 7: auto-detection or one named format) and whether the bytes go through a real file (bit 7: sg_input_load on
 * a temporary file, else sg_input_parse in memory); the rest is the file. For every input:
 *  - no crash, no leak (libFuzzer's leak check), and a failed parse leaves the result empty;
 *  - an error is one non-empty line that names the file; for a JSON-lines format it also names a line that
 *    exists in the file ("line N", 1 <= N <= lines), unless it is about the file as a whole (empty, no entries,
 *    format not detected); for a document (sharegpt, perf_analyzer) it names an element or is about the whole
 *    document;
 *  - a successful parse has at least one entry, a format other than auto, and entries whose fields are in
 *    range for that format: strings present and NUL-terminated at their length, output lengths -1 or
 *    1..INT32_MAX, request bodies that are JSON objects whose "model" is the one reported, trace lengths
 *    1..16,000,000 and timestamps sorted and relative to the first, lines in file order and inside the file.
 */
#define _GNU_SOURCE
#include "sg_input.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        abort();                                                                                                       \
    } while (0)

#define NAME "fuzz-input.jsonl"

static char file_path[256];

static void remove_file(void)
{
    if (file_path[0])
        unlink(file_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(file_path, sizeof file_path, "%s/surge-fuzz-input-%ld.jsonl", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    atexit(remove_file);
    return 0;
}

static bool jsonl_format(sg_input_format_t f)
{
    return f == SG_INPUT_GENAI_PERF || f == SG_INPUT_LLM_PERF || f == SG_INPUT_RAW_PAYLOAD || f == SG_INPUT_MOONCAKE;
}

static bool whole_file_error(const char *err)
{
    static const char *const msgs[] = {
        ": the file is empty",
        ": holds no entries",
        "cannot tell the format of ",
        ": not valid JSON: ",
        ": starts with '[' (a ShareGPT JSON array) but is not valid JSON",
        "conversations has a human turn followed by a reply",
        ": \"data\" must be an array",
        ": a perf_analyzer input file is a JSON object",
    };
    for (size_t i = 0; i < SG_ARRAY_LEN(msgs); i++)
        if (strstr(err, msgs[i]))
            return true;
    return false;
}

/* fail_at() messages start "<name> line N: " or "<name> element N: ": N, or -1 when the message does not start
 * so (only the start counts: keys and values quoted later in the message are input). */
static long located(const char *err, const char *name, const char *word)
{
    char pre[300];
    snprintf(pre, sizeof pre, "%s %s ", name, word);
    const char *p = err;
    if (strncmp(err, pre, strlen(pre)) != 0)
        return -1;
    char *end;
    long v = strtol(p + strlen(pre), &end, 10);
    if (end == p + strlen(pre) || *end != ':')
        FAIL("malformed location in \"%s\"", err);
    return v;
}

static void check_string(const char *what, const char *s, size_t len, bool required, size_t i)
{
    if (!s) {
        if (required)
            FAIL("entry %zu: %s missing", i, what);
        return;
    }
    if (s[len] != '\0')
        FAIL("entry %zu: %s not NUL-terminated at its length %zu", i, what, len);
}

static void check_max_tokens(const sg_input_entry_t *e, size_t i)
{
    if (!(e->max_tokens == -1 || (e->max_tokens >= 1 && e->max_tokens <= INT32_MAX)))
        FAIL("entry %zu: max_tokens %lld out of range", i, (long long)e->max_tokens);
}

static void check_entries(const sg_input_t *in, size_t lines)
{
    if (in->n == 0 || !in->e)
        FAIL("success with no entries");
    if (in->format == SG_INPUT_AUTO || (unsigned)in->format > SG_INPUT_MOONCAKE)
        FAIL("success with format %d", (int)in->format);
    bool jl = jsonl_format(in->format);
    for (size_t i = 0; i < in->n; i++) {
        const sg_input_entry_t *e = &in->e[i];
        check_max_tokens(e, i);
        if (jl && (e->where < 1 || e->where > lines))
            FAIL("entry %zu: line %u outside the file's %zu lines", i, e->where, lines);
        if (jl && in->format != SG_INPUT_MOONCAKE && i > 0 && e->where <= in->e[i - 1].where)
            FAIL("entry %zu: line %u not after the previous entry's %u", i, e->where, in->e[i - 1].where);
        if (!jl && i > 0 && e->where < in->e[i - 1].where)
            FAIL("entry %zu: element %u before the previous entry's %u", i, e->where, in->e[i - 1].where);
        switch (in->format) {
        case SG_INPUT_GENAI_PERF:
            check_string("prompt", e->prompt, e->prompt_len, true, i);
            if (e->body || e->reply || e->hash_ids)
                FAIL("entry %zu: genai_perf entry with a body, reply or hash ids", i);
            break;
        case SG_INPUT_LLM_PERF:
            check_string("prompt", e->prompt, e->prompt_len, true, i);
            check_string("reply", e->reply, e->reply_len, false, i);
            if (e->reply && e->max_tokens != -1)
                FAIL("entry %zu: both a reply and an output length", i);
            break;
        case SG_INPUT_SHAREGPT:
            check_string("prompt", e->prompt, e->prompt_len, true, i);
            check_string("reply", e->reply, e->reply_len, true, i);
            break;
        case SG_INPUT_PERF_ANALYZER:
        case SG_INPUT_RAW_PAYLOAD: {
            check_string("prompt", e->prompt, e->prompt_len, true, i);
            check_string("body", e->body, e->body_len, true, i);
            json_error_t je;
            json_t *b = json_loadb(e->body, e->body_len, JSON_ALLOW_NUL, &je);
            if (!json_is_object(b))
                FAIL("entry %zu: body is not a JSON object: %.*s", i, (int)e->body_len, e->body);
            const json_t *m = json_object_get(b, "model");
            if (json_is_string(m) != (e->model != NULL) || (e->model && strcmp(e->model, json_string_value(m)) != 0))
                FAIL("entry %zu: model \"%s\" does not match the body's", i, e->model ? e->model : "(none)");
            json_decref(b);
            break;
        }
        case SG_INPUT_MOONCAKE:
            if (e->prompt || e->body)
                FAIL("entry %zu: trace entry with a prompt or body", i);
            if (e->input_length < 1 || e->input_length > 16000000u)
                FAIL("entry %zu: input_length %u out of range", i, e->input_length);
            if (e->t_ns < 0 || (i == 0 && e->t_ns != 0) || (i > 0 && e->t_ns < in->e[i - 1].t_ns))
                FAIL("entry %zu: timestamp %lld not sorted from 0", i, (long long)e->t_ns);
            if (e->n_hash_ids && !e->hash_ids)
                FAIL("entry %zu: %zu hash ids but no array", i, e->n_hash_ids);
            break;
        default:
            break;
        }
    }
}

static void check_error(const char *err, const char *name, sg_input_format_t fmt, size_t lines)
{
    size_t n = strlen(err);
    if (n == 0)
        FAIL("error without a message");
    if (memchr(err, '\n', n) || memchr(err, '\r', n))
        FAIL("multi-line message: %s", err);
    if (!strstr(err, name))
        FAIL("message does not name %s: %s", name, err);
    long line = located(err, name, "line");
    long elem = located(err, name, "element");
    if (line >= 0 && (line < 1 || (size_t)line > lines))
        FAIL("message names line %ld of a %zu-line file: %s", line, lines, err);
    if (line < 0 && elem < 0 && !whole_file_error(err))
        FAIL("message names neither a line nor an element: %s", err);
    if (jsonl_format(fmt) && line < 0 && !whole_file_error(err))
        FAIL("JSON-lines error without a line: %s", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    sg_input_format_t fmt = (sg_input_format_t)((data[0] & 0x7f) % 7);
    bool via_file = data[0] & 0x80;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';

    sg_input_t in;
    memset(&in, 0xAB, sizeof in);
    char err[512];
    memset(err, 0, sizeof err);
    int rc;
    const char *name = NAME;
    if (via_file) {
        FILE *f = fopen(file_path, "wb");
        if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
            FAIL("cannot write %s", file_path);
        rc = sg_input_load(file_path, fmt, &in, err, sizeof err);
        name = file_path;
    } else {
        /* not NUL-terminated: the parser must keep to len */
        char *copy = malloc(len ? len : 1);
        memcpy(copy, text, len);
        rc = sg_input_parse(NAME, copy, len, fmt, &in, err, sizeof err);
        free(copy);
    }
    if (rc == 0) {
        if (fmt != SG_INPUT_AUTO && in.format != fmt)
            FAIL("asked for %s, got %s", sg_input_format_name(fmt), sg_input_format_name(in.format));
        check_entries(&in, lines);
        sg_input_free(&in);
    } else {
        if (rc != SG_EINVAL && rc != SG_ENOMEM)
            FAIL("unexpected error code %d", rc);
        if (in.n != 0 || in.e != NULL)
            FAIL("failed parse left %zu entries", in.n);
        check_error(err, name, fmt, lines);
    }
    return 0;
}
