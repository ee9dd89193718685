/* `surge tokenize`: the ids of the text on stdin, their count, or (--decode) the text of ids on stdin. */
#include "tok_internal.h"

#include "sg_opts.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: surge tokenize --tokenizer T [--count] [--jsonl] | --decode\n\n"
                 "Reads all of stdin and prints its token ids separated by spaces, then a newline. Special and\n"
                 "added tokens written in the text are matched as the tokenizer.json reference does; nothing\n"
                 "(no BOS/EOS) is added. tiktoken files encode special-token text as ordinary text.\n\n"
                 "  --tokenizer T   tokenizer.json, NAME.tiktoken (r50k_base, p50k_base, cl100k_base,\n"
                 "                  o200k_base), a directory holding tokenizer.json, or a Hugging Face model\n"
                 "                  id ORG/NAME in the local cache ($HF_HOME/hub or ~/.cache/huggingface/hub)\n"
                 "  --count         print only the number of ids\n"
                 "  --decode        read ids (separated by spaces or commas) and write their text\n"
                 "  --jsonl         each stdin line is a JSON string: print one line of ids (or count) per line\n"
                 "  --bench N       encode stdin N times; print load time and throughput as one JSON line\n");
}

static int read_all(FILE *f, char **data, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return SG_ENOMEM;
    for (;;) {
        if (n == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return SG_ENOMEM;
            }
            buf = b;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                free(buf);
                return -EIO;
            }
            break;
        }
    }
    *data = buf;
    *len = n;
    return 0;
}

/* Encode one text and print its ids (or their count) and a newline. */
static int encode_one(sg_tok_enc_t *enc, const char *in, size_t len, bool count)
{
    const uint32_t *ids;
    ssize_t n = sg_tok_encode(enc, in, len, &ids);
    if (n < 0) {
        fprintf(stderr, "surge tokenize: %s\n", sg_strerror((int)n));
        return 1;
    }
    if (count) {
        printf("%zd\n", n);
        return 0;
    }
    /* one buffer, written once: fast for millions of ids */
    size_t cap = (size_t)n * 11 + 2, w = 0;
    char *out = malloc(cap);
    if (!out)
        return 1;
    for (ssize_t i = 0; i < n; i++) {
        char tmp[12];
        int k = 0;
        uint32_t v = ids[i];
        do {
            tmp[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        if (i)
            out[w++] = ' ';
        while (k)
            out[w++] = tmp[--k];
    }
    out[w++] = '\n';
    int status = fwrite(out, 1, w, stdout) == w ? 0 : 1;
    free(out);
    return status;
}

/* --jsonl: one JSON string per line in, one line of ids out. */
static int do_jsonl(sg_tok_enc_t *enc, const char *in, size_t len, bool count)
{
    size_t lineno = 0;
    for (const char *p = in, *end = in + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        json_error_t jerr;
        json_t *v = json_loadb(p, (size_t)(le - p), JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!v || !json_is_string(v)) {
            fprintf(stderr, "surge tokenize: --jsonl: stdin line %zu: expected a JSON string\n", lineno);
            json_decref(v);
            return 1;
        }
        int st = encode_one(enc, json_string_value(v), json_string_length(v), count);
        json_decref(v);
        if (st)
            return st;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int do_decode(const sg_tokenizer_t *tok, const char *in, size_t len)
{
    size_t cap = 1024, n = 0;
    uint32_t *ids = malloc(cap * sizeof *ids);
    if (!ids)
        return 1;
    const char *p = in, *end = in + len;
    while (p < end) {
        if (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t' || *p == '\r' || *p == '[' || *p == ']') {
            p++;
            continue;
        }
        uint64_t v = 0;
        const char *s = p;
        while (p < end && *p >= '0' && *p <= '9' && v <= UINT32_MAX)
            v = v * 10 + (uint64_t)(*p++ - '0');
        if (p == s || v > UINT32_MAX) {
            fprintf(stderr, "surge tokenize: --decode: stdin byte %zu: expected an id\n", (size_t)(s - in));
            free(ids);
            return 2;
        }
        if (n == cap) {
            uint32_t *b = realloc(ids, cap * 2 * sizeof *ids);
            if (!b) {
                free(ids);
                return 1;
            }
            ids = b;
            cap *= 2;
        }
        ids[n++] = (uint32_t)v;
    }
    ssize_t need = sg_tok_decode(tok, ids, n, NULL, 0);
    if (need < 0) {
        for (size_t i = 0; i < n; i++) {
            if (sg_tok_decode(tok, &ids[i], 1, NULL, 0) < 0) {
                fprintf(stderr, "surge tokenize: --decode: id %u is not in the vocabulary (%u ids)\n", ids[i],
                        sg_tok_vocab_size(tok));
                break;
            }
        }
        free(ids);
        return 1;
    }
    char *out = malloc((size_t)need + 1);
    int status = 0;
    if (!out || sg_tok_decode(tok, ids, n, out, (size_t)need) != need ||
        fwrite(out, 1, (size_t)need, stdout) != (size_t)need)
        status = 1;
    free(out);
    free(ids);
    return status;
}

static int do_bench(const sg_tokenizer_t *tok, sg_tok_enc_t *enc, const char *in, size_t len, long reps, double load_ms)
{
    double *secs = malloc((size_t)reps * sizeof *secs);
    if (!secs)
        return 1;
    ssize_t n = 0;
    for (long r = 0; r < reps; r++) {
        /* a fresh encoder each round: the cache starts cold, as for a new run */
        sg_tok_enc_t *e = r == 0 ? enc : sg_tok_enc_new(tok);
        if (!e) {
            free(secs);
            return 1;
        }
        int64_t t0 = sg_now_ns();
        n = sg_tok_count(e, in, len);
        int64_t t1 = sg_now_ns();
        if (e != enc)
            sg_tok_enc_free(e);
        if (n < 0) {
            free(secs);
            fprintf(stderr, "surge tokenize: %s\n", sg_strerror((int)n));
            return 1;
        }
        secs[r] = (double)(t1 - t0) / 1e9;
    }
    qsort(secs, (size_t)reps, sizeof *secs, cmp_double);
    double med = reps % 2 ? secs[reps / 2] : (secs[reps / 2 - 1] + secs[reps / 2]) / 2;
    printf("{\"load_ms\": %.3f, \"bytes\": %zu, \"tokens\": %zd, \"reps\": %ld, \"median_s\": %.6f, "
           "\"min_s\": %.6f, \"mb_per_s\": %.3f}\n",
           load_ms, len, n, reps, med, secs[0], med > 0 ? (double)len / 1e6 / med : 0.0);
    free(secs);
    return 0;
}

int sg_tokenize_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"tokenizer", required_argument, NULL, 't'},
        {"count", no_argument, NULL, 'c'},
        {"decode", no_argument, NULL, 'd'},
        {"bench", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {"jsonl", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    const char *spec = NULL;
    bool count = false, decode = false, jsonl = false;
    long bench = 0;
    if (sg_opts_check("surge tokenize", "surge tokenize --help", argc, argv, ":h", opts) < 0)
        return 2;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            spec = optarg;
            break;
        case 'c':
            count = true;
            break;
        case 'd':
            decode = true;
            break;
        case 'j':
            jsonl = true;
            break;
        case 'b': {
            char *e;
            bench = strtol(optarg, &e, 10);
            if (*e || bench < 1 || bench > 100000) {
                fprintf(stderr, "surge tokenize: --bench %s: expected a count from 1 to 100000\n", optarg);
                return 2;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            fprintf(stderr, "surge tokenize: %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "surge tokenize: unknown option %s\n\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "surge tokenize: unexpected argument \"%s\" (the text comes on stdin)\n", argv[optind]);
        return 2;
    }
    if (!spec) {
        fprintf(stderr, "surge tokenize: --tokenizer is required\n\n");
        usage(stderr);
        return 2;
    }
    if ((decode && (count || bench || jsonl)) || (jsonl && bench)) {
        fprintf(stderr, "surge tokenize: --decode goes with no other mode, --jsonl not with --bench\n");
        return 2;
    }

    char err[512];
    sg_tokenizer_t *tok;
    int64_t t0 = sg_now_ns();
    if (sg_tok_load(spec, &tok, err, sizeof err) < 0) {
        fprintf(stderr, "surge tokenize: --tokenizer %s: %s\n", spec, err);
        return 1;
    }
    double load_ms = (double)(sg_now_ns() - t0) / 1e6;
    char *in;
    size_t len;
    if (read_all(stdin, &in, &len) < 0) {
        fprintf(stderr, "surge tokenize: cannot read stdin\n");
        sg_tok_free(tok);
        return 1;
    }
    int status = 0;
    if (decode) {
        status = do_decode(tok, in, len);
        free(in);
        sg_tok_free(tok);
        return status;
    }
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    if (!enc) {
        fprintf(stderr, "surge tokenize: out of memory\n");
        free(in);
        sg_tok_free(tok);
        return 1;
    }
    if (bench) {
        status = do_bench(tok, enc, in, len, bench, load_ms);
    } else if (jsonl) {
        status = do_jsonl(enc, in, len, count);
    } else {
        status = encode_one(enc, in, len, count);
    }
    if (fflush(stdout) != 0)
        status = 1;
    sg_tok_enc_free(enc);
    free(in);
    sg_tok_free(tok);
    return status;
}
