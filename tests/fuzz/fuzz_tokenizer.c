/*
 * Tokenizer encode/decode on arbitrary bytes, against three small handmade files written once at start-up:
 *   - a tiktoken rank file (cl100k_base regex): the 256 bytes and a few merges;
 *   - a byte-level HF tokenizer.json: a Split regex (GPT-2's) then ByteLevel, a few merges, and an added token
 *     "<|end|>";
 *   - a SentencePiece-style HF tokenizer.json (Llama 2's layout): Prepend/Replace normalizer, byte fallback,
 *     an added token "<|x|>".
 * For every input and every tokenizer:
 *  - encode succeeds on any bytes, the same ids twice (the encoder's cache must not change them), and count
 *    agrees with encode;
 *  - every id is below the vocabulary size and decodes;
 *  - decode(encode(x)) == x where the tokenizer is lossless. Byte-level files (tiktoken, ByteLevel without a
 *    normalizer) are lossless on every input. The SentencePiece file is not, by design of the reference: text
 *    holding U+2581 decodes it as a space, and the text after an added token ("<|x|>", or "<unk>", which
 *    Llama 2's files list as an added token too) gets its own "\u2581" prefix, which
 *    decodes as an extra space; so it is checked only on inputs holding neither.
 *  - the byte-level HF file cuts out every "<|end|>" in the text as its added id; the tiktoken file treats
 *    special-token text as plain text and never yields a special id.
 * (Splitting the text and encoding the parts is NOT expected to give the same ids: BPE merges across the cut.)
 */
#define _GNU_SOURCE
#include "sg_tokenizer.h"

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

#define META "\xE2\x96\x81"

enum { TIK, BL, SPM, N_TOK };
static const char *const tok_names[N_TOK] = {"tiktoken", "byte-level json", "sentencepiece json"};
static sg_tokenizer_t *toks[N_TOK];
static sg_tok_enc_t *encs[N_TOK];
static uint32_t bl_end_id;
static char dir[256];
static char paths[N_TOK][300];

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static void put(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            FAIL("out of memory");
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

static void write_out(const char *path, const buf_t *b)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0)
        FAIL("cannot write %s", path);
}

static void b64(const unsigned char *in, size_t n, buf_t *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        char q[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=', i + 2 < n ? t[v & 63] : '='};
        put(out, q, 4);
    }
}

/* Merged tokens, as byte strings, in rank order; each is the concatenation of two earlier tokens. */
static const char *const merges[][2] = {
    {"a", "a"}, {"aa", "aa"}, {" ", "t"}, {"h", "e"},  {" t", "he"},     {"\n", "\n"},
    {" ", " "}, {"  ", "  "}, {"i", "n"}, {"in", "g"}, {"\xC3", "\xA9"}, {"e", "r"},
};
#define N_MERGES (sizeof merges / sizeof merges[0])

static void write_tiktoken(const char *path)
{
    buf_t b = {0};
    char line[64];
    for (int i = 0; i < 256; i++) {
        unsigned char c = (unsigned char)i;
        b64(&c, 1, &b);
        snprintf(line, sizeof line, " %d\n", i);
        puts_(&b, line);
    }
    for (size_t i = 0; i < N_MERGES; i++) {
        char tok[32];
        snprintf(tok, sizeof tok, "%s%s", merges[i][0], merges[i][1]);
        b64((const unsigned char *)tok, strlen(tok), &b);
        snprintf(line, sizeof line, " %zu\n", 256 + i);
        puts_(&b, line);
    }
    write_out(path, &b);
    free(b.p);
}

/* GPT-2's byte -> printable code point table, each written as a JSON \u escape. */
static void put_bytelevel(buf_t *b, const char *s)
{
    for (; *s; s++) {
        unsigned c = (unsigned char)*s;
        unsigned cp;
        if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)) {
            cp = c;
        } else {
            unsigned extra = 0;
            for (unsigned x = 0; x < c; x++)
                extra += !((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF));
            cp = 256 + extra;
        }
        char e[8];
        snprintf(e, sizeof e, "\\u%04X", cp);
        puts_(b, e);
    }
}

static void write_bytelevel(const char *path)
{
    buf_t b = {0};
    char line[160];
    bl_end_id = 256 + N_MERGES;
    snprintf(line, sizeof line,
             "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":%u,\"content\":\"<|end|>\",\"single_word\":false,"
             "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],\n",
             bl_end_id);
    puts_(&b, line);
    puts_(&b, "\"normalizer\":null,\n\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
              "\"pattern\":{\"Regex\":\"'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|"
              "\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
              "\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]},\n"
              "\"decoder\":{\"type\":\"ByteLevel\"},\n\"model\":{\"type\":\"BPE\",\"dropout\":null,"
              "\"unk_token\":null,\"ignore_merges\":false,\"vocab\":{");
    for (int i = 0; i < 256; i++) {
        char s[2] = {(char)i, 0};
        puts_(&b, i ? ",\"" : "\"");
        if (i == 0)
            puts_(&b, "\\u0100"); /* byte 0 maps to U+0100 */
        else
            put_bytelevel(&b, s);
        snprintf(line, sizeof line, "\":%d", i);
        puts_(&b, line);
    }
    for (size_t i = 0; i < N_MERGES; i++) {
        char tok[32];
        snprintf(tok, sizeof tok, "%s%s", merges[i][0], merges[i][1]);
        puts_(&b, ",\"");
        put_bytelevel(&b, tok);
        snprintf(line, sizeof line, "\":%zu", 256 + i);
        puts_(&b, line);
    }
    puts_(&b, "},\n\"merges\":[");
    for (size_t i = 0; i < N_MERGES; i++) {
        puts_(&b, i ? ",[\"" : "[\"");
        put_bytelevel(&b, merges[i][0]);
        puts_(&b, "\",\"");
        put_bytelevel(&b, merges[i][1]);
        puts_(&b, "\"]");
    }
    puts_(&b, "]}}\n");
    write_out(path, &b);
    free(b.p);
}

/* Llama 2's layout: <unk> 0, <0x00>..<0xFF> 1..256, then pieces; merges as "a b" strings. */
static void write_spm(const char *path)
{
    buf_t b = {0};
    char line[64];
    puts_(&b, "{\"version\":\"1.0\",\n\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
              "{\"id\":268,\"content\":\"<|x|>\",\"special\":true,\"lstrip\":false,\"rstrip\":false,"
              "\"single_word\":false,\"normalized\":false}],\n"
              "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":"
              "\"\\u2581\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},\n"
              "\"pre_tokenizer\":null,\n\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
              "\"byte_fallback\":true,\"vocab\":{\"<unk>\":0");
    for (int i = 0; i < 256; i++) {
        snprintf(line, sizeof line, ",\"<0x%02X>\":%d", i, i + 1);
        puts_(&b, line);
    }
    puts_(&b, ",\"" META "\":257,\"a\":258,\"b\":259,\"" META "a\":260,\"ab\":261,\"" META "ab\":262,"
              "\"t\":263,\"h\":264,\"e\":265,\"he\":266,\"" META "t\":267},\n"
              "\"merges\":[\"a b\",\"" META " a\",\"" META "a b\",\"h e\",\"" META " t\"]}}\n");
    write_out(path, &b);
    free(b.p);
}

static void cleanup(void)
{
    for (int i = 0; i < N_TOK; i++) {
        sg_tok_enc_free(encs[i]);
        sg_tok_free(toks[i]);
        if (paths[i][0])
            unlink(paths[i]);
    }
    if (dir[0])
        rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/surge-fuzz-tok-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        FAIL("mkdtemp %s failed", dir);
    snprintf(paths[TIK], sizeof paths[TIK], "%s/cl100k_base.tiktoken", dir);
    snprintf(paths[BL], sizeof paths[BL], "%s/bytelevel.json", dir);
    snprintf(paths[SPM], sizeof paths[SPM], "%s/spm.json", dir);
    atexit(cleanup);
    write_tiktoken(paths[TIK]);
    write_bytelevel(paths[BL]);
    write_spm(paths[SPM]);
    for (int i = 0; i < N_TOK; i++) {
        char err[512];
        if (sg_tok_load(paths[i], &toks[i], err, sizeof err) < 0)
            FAIL("%s: %s", tok_names[i], err);
        if (!(encs[i] = sg_tok_enc_new(toks[i])))
            FAIL("out of memory");
    }
    return 0;
}

static size_t count_of(const char *hay, size_t len, const char *needle)
{
    size_t n = 0, nl = strlen(needle);
    const char *p = hay, *end = hay + len;
    while ((p = memmem(p, (size_t)(end - p), needle, nl)) != NULL) {
        n++;
        p += nl;
    }
    return n;
}

static void check(int which, const char *text, size_t len)
{
    const sg_tokenizer_t *tok = toks[which];
    sg_tok_enc_t *enc = encs[which];
    const char *name = tok_names[which];
    uint32_t vocab = sg_tok_vocab_size(tok);

    const uint32_t *ids;
    ssize_t n = sg_tok_encode(enc, text, len, &ids);
    if (n < 0)
        FAIL("%s: encode failed (%zd) on %zu bytes", name, n, len);
    if ((size_t)n > len + 1)
        FAIL("%s: %zd ids for %zu bytes", name, n, len);
    uint32_t *copy = malloc(((size_t)n + 1) * sizeof *copy);
    if (n > 0)
        memcpy(copy, ids, (size_t)n * sizeof *copy);
    for (ssize_t i = 0; i < n; i++)
        if (copy[i] >= vocab)
            FAIL("%s: id %u at %zd is not below the vocabulary size %u", name, copy[i], i, vocab);

    /* the same again (now through the cache), and count agrees */
    const uint32_t *ids2;
    ssize_t n2 = sg_tok_encode(enc, text, len, &ids2);
    if (n2 != n || (n > 0 && memcmp(ids2, copy, (size_t)n * sizeof *copy) != 0))
        FAIL("%s: a second encode gave %zd ids, the first %zd (or different ids)", name, n2, n);
    ssize_t c = sg_tok_count(enc, text, len);
    if (c != n)
        FAIL("%s: count %zd, encode %zd", name, c, n);

    ssize_t need = sg_tok_decode(tok, copy, (size_t)n, NULL, 0);
    if (need < 0)
        FAIL("%s: decode failed (%zd)", name, need);
    char *out = malloc((size_t)need + 1);
    ssize_t got = sg_tok_decode(tok, copy, (size_t)n, out, (size_t)need + 1);
    if (got != need)
        FAIL("%s: decode gave %zd bytes, measured %zd", name, got, need);

    bool lossless = which != SPM ||
                    (!memmem(text, len, META, 3) && !memmem(text, len, "<|x|>", 5) && !memmem(text, len, "<unk>", 5));
    if (lossless && ((size_t)got != len || memcmp(out, text, len) != 0))
        FAIL("%s: decode(encode(x)) != x: %zu bytes in, %zd out: \"%.*s\" -> \"%.*s\"", name, len, got, (int)len, text,
             (int)got, out);

    if (which == BL) {
        size_t want = count_of(text, len, "<|end|>"), have = 0;
        for (ssize_t i = 0; i < n; i++)
            have += copy[i] == bl_end_id;
        if (have != want)
            FAIL("%s: %zu \"<|end|>\" in the text, %zu added ids", name, want, have);
    }
    if (which == TIK)
        for (ssize_t i = 0; i < n; i++)
            if (copy[i] >= 256 + N_MERGES)
                FAIL("%s: special id %u from plain text", name, copy[i]);
    free(out);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* not NUL-terminated: encode must keep to len */
    char *text = malloc(size ? size : 1);
    memcpy(text, data, size);
    for (int i = 0; i < N_TOK; i++)
        check(i, text, size);
    free(text);
    return 0;
}
