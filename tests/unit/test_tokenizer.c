/* The tokenizer on small handmade files: BPE order, byte fallback, added tokens, both merge formats, the HF
 * cache lookup, decode round trips, long runs (heap path), and error messages that name file, line and field.
 * Then each HF pipeline component on its own (every Split behaviour, the other pre-tokenizers, the normalizers,
 * Precompiled's trie, Unigram, WordPiece), so that a regression shows without the network's real files. */
#define _GNU_SOURCE
#include "test.h"

#include "sg_tokenizer.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void write_file(const char *name, const char *text, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
}

static void b64(const unsigned char *in, size_t n, char *out)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t w = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[w++] = t[v >> 18 & 63];
        out[w++] = t[v >> 12 & 63];
        out[w++] = i + 1 < n ? t[v >> 6 & 63] : '=';
        out[w++] = i + 2 < n ? t[v & 63] : '=';
    }
    out[w] = '\0';
}

/* A cl100k_base-named rank file: the 256 bytes, then extra tokens at ranks 256... */
static void write_tiktoken(const char *name, const char *const *extra, size_t n_extra, const char *bad_line)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    char enc[64];
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        b64(&c, 1, enc);
        len += (size_t)snprintf(buf + len, cap - len, "%s %d\n", enc, b);
    }
    for (size_t i = 0; i < n_extra; i++) {
        b64((const unsigned char *)extra[i], strlen(extra[i]), enc);
        len += (size_t)snprintf(buf + len, cap - len, "%s %zu\n", enc, 256 + i);
    }
    if (bad_line)
        len += (size_t)snprintf(buf + len, cap - len, "%s\n", bad_line);
    write_file(name, buf, len);
    free(buf);
}

static sg_tokenizer_t *load(const char *name, char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sg_tokenizer_t *tok = NULL;
    if (sg_tok_load(path, &tok, err, errlen) < 0)
        return NULL;
    return tok;
}

static bool ids_are(sg_tok_enc_t *enc, const char *text, const uint32_t *want, size_t n)
{
    const uint32_t *ids;
    ssize_t got = sg_tok_encode(enc, text, strlen(text), &ids);
    if (got != (ssize_t)n || (n > 0 && memcmp(ids, want, n * sizeof *ids) != 0)) {
        fprintf(stderr, "  \"%s\": got %zd ids:", text, got);
        for (ssize_t i = 0; i < got && i < 20; i++)
            fprintf(stderr, " %u", ids[i]);
        fprintf(stderr, "\n");
        return false;
    }
    return sg_tok_count(enc, text, strlen(text)) == (ssize_t)n;
}

static bool round_trips(const sg_tokenizer_t *tok, sg_tok_enc_t *enc, const char *text, size_t len)
{
    const uint32_t *ids;
    ssize_t n = sg_tok_encode(enc, text, len, &ids);
    if (n < 0)
        return false;
    ssize_t need = sg_tok_decode(tok, ids, (size_t)n, NULL, 0);
    if (need != (ssize_t)len)
        return false;
    char *out = malloc(len + 1);
    bool ok = sg_tok_decode(tok, ids, (size_t)n, out, len + 1) == (ssize_t)len && memcmp(out, text, len) == 0;
    free(out);
    return ok;
}

static void test_tiktoken(void)
{
    /* "ab" ranks below "bc": in "abc" the lower rank merges first, even though "bc" comes later */
    const char *extra[] = {"ab", "bc", "aa", "aaaa", "  ", "    "};
    write_tiktoken("cl100k_base.tiktoken", extra, SG_ARRAY_LEN(extra), NULL);
    char err[512] = "";
    sg_tokenizer_t *tok = load("cl100k_base.tiktoken", err, sizeof err);
    CHECK(tok != NULL);
    if (!tok) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    /* 256 bytes + 6 ranks, then cl100k's specials up to <|endofprompt|> = 100276 */
    CHECK_EQ_INT(sg_tok_vocab_size(tok), 100277);
    CHECK(strstr(sg_tok_describe(tok), "cl100k_base") != NULL);
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    CHECK(ids_are(enc, "ab", (uint32_t[]){256}, 1));       /* a whole pre-token that is a rank */
    CHECK(ids_are(enc, "abc", (uint32_t[]){256, 'c'}, 2)); /* not [a, bc] */
    CHECK(ids_are(enc, "bcab", (uint32_t[]){257, 256}, 2));
    CHECK(ids_are(enc, "aaaaa", (uint32_t[]){259, 'a'}, 2));
    CHECK(ids_are(enc, "", NULL, 0));
    /* special-token text is ordinary text for tiktoken files */
    const uint32_t *ids;
    ssize_t n = sg_tok_encode(enc, "<|endoftext|>", 13, &ids);
    CHECK(n > 1);
    for (ssize_t i = 0; i < n; i++)
        CHECK(ids[i] != 100257);
    /* ... and decodes to its text */
    char out[64];
    CHECK_EQ_INT(sg_tok_decode(tok, (uint32_t[]){100257}, 1, out, sizeof out), 13);
    CHECK(memcmp(out, "<|endoftext|>", 13) == 0);
    CHECK_EQ_INT(sg_tok_decode(tok, (uint32_t[]){100256}, 1, out, sizeof out), SG_EINVAL); /* unassigned */
    CHECK_EQ_INT(sg_tok_decode(tok, (uint32_t[]){100277}, 1, out, sizeof out), SG_EINVAL);
    /* a decode into a short buffer reports the full length */
    CHECK_EQ_INT(sg_tok_decode(tok, (uint32_t[]){259, 259}, 2, out, 4), 8);

    /* 20,000 'a' are one pre-token: the heap path; 5,000 "aaaa" */
    size_t big = 20000;
    char *run = malloc(big + 1);
    memset(run, 'a', big);
    run[big] = '\0';
    n = sg_tok_encode(enc, run, big, &ids);
    CHECK_EQ_INT(n, 5000);
    CHECK(n > 0 && ids[0] == 259 && ids[n - 1] == 259);
    CHECK(round_trips(tok, enc, run, big));
    /* 10,001 spaces: "  "/"    " merges, one space left over somewhere; the bytes come back */
    memset(run, ' ', 10001);
    CHECK(round_trips(tok, enc, run, 10001));
    free(run);
    const char *samples[] = {"hello world", "tab\there\n\n  x", "caf\xC3\xA9 \xF0\x9F\x8C\x8D", "\xFF\xFE bad utf8"};
    for (size_t i = 0; i < SG_ARRAY_LEN(samples); i++)
        CHECK(round_trips(tok, enc, samples[i], strlen(samples[i])));
    sg_tok_enc_free(enc);
    sg_tok_free(tok);
}

static void test_tiktoken_errors(void)
{
    char err[512];
    write_tiktoken("p50k_base.tiktoken", NULL, 0, "!!!! 256");
    CHECK(load("p50k_base.tiktoken", err, sizeof err) == NULL);
    CHECK(strstr(err, "p50k_base.tiktoken line 257: bad base64") != NULL);
    if (!strstr(err, "line 257"))
        fprintf(stderr, "  %s\n", err);
    write_tiktoken("r50k_base.tiktoken", NULL, 0, "YWI= x");
    CHECK(load("r50k_base.tiktoken", err, sizeof err) == NULL);
    CHECK(strstr(err, "r50k_base.tiktoken line 257: bad rank") != NULL);
    write_tiktoken("o200k_base.tiktoken", NULL, 0, "YWI= 5");
    CHECK(load("o200k_base.tiktoken", err, sizeof err) == NULL);
    CHECK(strstr(err, "line 257: rank 5 given twice") != NULL);
    write_tiktoken("mystery.tiktoken", NULL, 0, NULL);
    CHECK(load("mystery.tiktoken", err, sizeof err) == NULL);
    CHECK(strstr(err, "mystery.tiktoken: unknown tiktoken encoding") != NULL);
}

/* A SentencePiece-style tokenizer.json (Llama 2's layout), merges in the given form. */
static void write_spm(const char *name, bool array_merges, const char *merge3)
{
    char *buf = malloc(1 << 16);
    size_t len = 0, cap = 1 << 16;
    len += (size_t)snprintf(
        buf + len, cap - len,
        "{\"version\":\"1.0\",\n\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
        "{\"id\":263,\"content\":\"<|x|>\",\"special\":true,\"lstrip\":false,\"rstrip\":false,"
        "\"single_word\":false,\"normalized\":false}],\n"
        "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":"
        "\"\\u2581\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},\n"
        "\"pre_tokenizer\":null,\n\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
        "\"byte_fallback\":true,\"vocab\":{\"<unk>\":0");
    for (int b = 0; b < 256; b++)
        len += (size_t)snprintf(buf + len, cap - len, ",\"<0x%02X>\":%d", b, b + 1);
    len += (size_t)snprintf(buf + len, cap - len,
                            ",\"\xE2\x96\x81\":257,\"a\":258,\"b\":259,\"\xE2\x96\x81"
                            "a\":260,\"ab\":261,"
                            "\"\xE2\x96\x81"
                            "ab\":262},\n\"merges\":");
    if (array_merges)
        len += (size_t)snprintf(buf + len, cap - len, "[[\"a\",\"b\"],[\"\xE2\x96\x81\",\"a\"],%s]}}\n",
                                merge3 ? merge3
                                       : "[\"\xE2\x96\x81"
                                         "a\",\"b\"]");
    else
        len += (size_t)snprintf(buf + len, cap - len, "[\"a b\",\"\xE2\x96\x81 a\",%s]}}\n",
                                merge3 ? merge3
                                       : "\"\xE2\x96\x81"
                                         "a b\"");
    write_file(name, buf, len);
    free(buf);
}

static void test_spm(void)
{
    char err[512] = "";
    write_spm("spm.json", false, NULL);
    mkdir(strcat(strcpy((char[512]){0}, dir), "/arr"), 0755);
    write_spm("arr/tokenizer.json", true, NULL);
    sg_tokenizer_t *tok = load("spm.json", err, sizeof err);
    CHECK(tok != NULL);
    if (!tok) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    char adir[512];
    snprintf(adir, sizeof adir, "%s/arr", dir);
    sg_tokenizer_t *tok2 = NULL;
    CHECK(sg_tok_load(adir, &tok2, err, sizeof err) == 0); /* a directory holding tokenizer.json */
    CHECK_EQ_INT(sg_tok_vocab_size(tok), 264);
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    sg_tok_enc_t *enc2 = tok2 ? sg_tok_enc_new(tok2) : NULL;
    /* "ab" -> "\u2581ab": "a b" (rank 0) first, then nothing joins "\u2581" + "ab" */
    CHECK(ids_are(enc, "ab", (uint32_t[]){257, 261}, 2));
    /* "a" -> "\u2581a" */
    CHECK(ids_are(enc, "a a", (uint32_t[]){260, 260}, 2));
    /* byte fallback for characters not in the vocabulary: 'c' = <0x63>, U+00E9 = <0xC3><0xA9> */
    CHECK(ids_are(enc, "c\xC3\xA9", (uint32_t[]){257, 0x63 + 1, 0xC3 + 1, 0xA9 + 1}, 4));
    /* added tokens are cut out first; each side is normalized on its own (gets its own "\u2581") */
    CHECK(ids_are(enc, "a<|x|>a", (uint32_t[]){260, 263, 260}, 3));
    CHECK(ids_are(enc, "<|x|>", (uint32_t[]){263}, 1));
    CHECK(ids_are(enc, "<unk>", (uint32_t[]){0}, 1));
    if (enc2) {
        CHECK(ids_are(enc2, "ab", (uint32_t[]){257, 261}, 2));
        CHECK(ids_are(enc2, "a<|x|>a", (uint32_t[]){260, 263, 260}, 3));
    }
    /* decode: "\u2581" is a space, <0xNN> a byte, one leading space dropped */
    char out[64];
    ssize_t n = sg_tok_decode(tok, (uint32_t[]){260, 257, 0x63 + 1, 0xC3 + 1, 0xA9 + 1}, 5, out, sizeof out);
    CHECK_EQ_STR(out, n, "a c\xC3\xA9");
    CHECK(round_trips(tok, enc, "a ab c", 6));
    sg_tok_enc_free(enc);
    sg_tok_enc_free(enc2);
    sg_tok_free(tok);
    sg_tok_free(tok2);
}

static void test_hf_errors(void)
{
    char err[512];
    write_spm("bad1.json", false,
              "\"\xE2\x96\x81"
              "a zz\"");
    CHECK(load("bad1.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "bad1.json: model.merges[2]: unknown token \"zz\"") != NULL);
    write_spm("bad2.json", true, "[\"a\"]");
    CHECK(load("bad2.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "model.merges[2]: expected [LEFT, RIGHT]") != NULL);
    const char *model = "{\"model\":{\"type\":\"Mystery\",\"vocab\":[]}}";
    write_file("mystery.json", model, strlen(model));
    CHECK(load("mystery.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "mystery.json: model: type \"Mystery\" is not supported") != NULL);
    const char *nmt =
        "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Nmt\"}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}";
    write_file("nmt.json", nmt, strlen(nmt));
    CHECK(load("nmt.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "nmt.json: normalizer.normalizers[1]: type \"Nmt\" is not supported") != NULL);
    const char *foo = "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\"},"
                      "{\"type\":\"Foo\"}]},\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}";
    write_file("foo.json", foo, strlen(foo));
    CHECK(load("foo.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "foo.json: pre_tokenizer.pretokenizers[1]: type \"Foo\" is not supported") != NULL);
    const char *beh =
        "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Sideways\"},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}";
    write_file("beh.json", beh, strlen(beh));
    CHECK(load("beh.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "pre_tokenizer.behavior: \"Sideways\" is not supported") != NULL);
    const char *trunc = "{\"model\":{\"type\":\"BPE\",\n\"vocab\":{\"a\":0,\n";
    write_file("trunc.json", trunc, strlen(trunc));
    CHECK(load("trunc.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "trunc.json: ") != NULL && strstr(err, "malformed JSON") != NULL);
}

/*
 * Pipeline components, seen through a WordPiece model whose vocabulary is single characters (c and ##c): each
 * pre-token becomes its characters, and decoding writes a space before each pre-token's first one. So
 * decode(encode(text)) is the normalized text with one space between pre-tokens: "a - b" for [a][-][b].
 */
static const char *const wp_chars[] = {"\xE2\x96\x81", "\xC3\xA9", "\xCC\x81",     "\xC3\xA0",    "\xE4\xB8\xAD",
                                       "\xE6\x96\x87", "\xD9\xA1", "\xE3\x80\x82", "\xEF\xBC\x8C"};

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static void put(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        char *q = realloc(b->p, b->cap);
        if (!q)
            abort();
        b->p = q;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_json_str(buf_t *b, const char *s)
{
    put(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            put(b, "\\", 1);
        put(b, s, 1);
    }
    put(b, "\"", 1);
}

static sg_tokenizer_t *wp_chars_tok(const char *name, const char *normalizer, const char *pre_tokenizer)
{
    buf_t b = {0};
    char tmp[64];
    put(&b, "{\"normalizer\":", 14);
    put(&b, normalizer, strlen(normalizer));
    put(&b, ",\"pre_tokenizer\":", 17);
    put(&b, pre_tokenizer, strlen(pre_tokenizer));
    const char *m = ",\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
                    "\"max_input_chars_per_word\":100,\"vocab\":{\"[UNK]\":0";
    put(&b, m, strlen(m));
    int id = 1;
    for (int c = 0x20; c < 0x7F; c++) {
        char ch[2] = {(char)c, 0};
        for (int cont = 0; cont < 2; cont++) {
            snprintf(tmp, sizeof tmp, "%s%s", cont ? "##" : "", ch);
            put(&b, ",", 1);
            put_json_str(&b, tmp);
            int n = snprintf(tmp, sizeof tmp, ":%d", id++);
            put(&b, tmp, (size_t)n);
        }
    }
    for (size_t i = 0; i < SG_ARRAY_LEN(wp_chars); i++) {
        for (int cont = 0; cont < 2; cont++) {
            snprintf(tmp, sizeof tmp, "%s%s", cont ? "##" : "", wp_chars[i]);
            put(&b, ",", 1);
            put_json_str(&b, tmp);
            int n = snprintf(tmp, sizeof tmp, ":%d", id++);
            put(&b, tmp, (size_t)n);
        }
    }
    put(&b, "}}}\n", 4);
    write_file(name, b.p, b.len);
    free(b.p);
    char err[512] = "";
    sg_tokenizer_t *tok = load(name, err, sizeof err);
    if (!tok)
        fprintf(stderr, "  %s: %s\n", name, err);
    return tok;
}

/* decode(encode(text)) through tok, NUL-terminated in out. */
static const char *pieces(sg_tokenizer_t *tok, const char *text, char *out, size_t cap)
{
    out[0] = '\0';
    if (!tok)
        return out;
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    const uint32_t *ids;
    ssize_t n = sg_tok_encode(enc, text, strlen(text), &ids);
    ssize_t w = n < 0 ? -1 : sg_tok_decode(tok, ids, (size_t)n, out, cap - 1);
    out[w >= 0 && (size_t)w < cap ? (size_t)w : 0] = '\0';
    sg_tok_enc_free(enc);
    return out;
}

#define PIECES(tok, text, want)                                                                                        \
    do {                                                                                                               \
        char got_[512];                                                                                                \
        pieces((tok), (text), got_, sizeof got_);                                                                      \
        if (strcmp(got_, (want)) != 0)                                                                                 \
            fprintf(stderr, "  \"%s\": got \"%s\", want \"%s\"\n", (text), got_, (want));                              \
        CHECK(strcmp(got_, (want)) == 0);                                                                              \
    } while (0)

static void split_case(const char *pattern, const char *behavior, bool invert, const char *text, const char *want)
{
    char pre[300];
    snprintf(pre, sizeof pre, "{\"type\":\"Split\",\"pattern\":%s,\"behavior\":\"%s\",\"invert\":%s}", pattern,
             behavior, invert ? "true" : "false");
    sg_tokenizer_t *tok = wp_chars_tok("split.json", "null", pre);
    PIECES(tok, text, want);
    sg_tok_free(tok);
}

static void test_split(void)
{
    const char *dash = "{\"String\":\"-\"}";
    split_case(dash, "Removed", false, "a--b-c", "a b c");
    split_case(dash, "Isolated", false, "a--b-c", "a - - b - c");
    split_case(dash, "MergedWithPrevious", false, "a--b-c", "a- - b- c");
    split_case(dash, "MergedWithNext", false, "a--b-c", "a - -b -c");
    split_case(dash, "Contiguous", false, "a--b-c", "a -- b - c");
    split_case(dash, "MergedWithPrevious", false, "-a-", "- a-");
    split_case(dash, "MergedWithNext", false, "-a-", "-a -");
    const char *word = "{\"Regex\":\"[a-z]+\"}";
    split_case(word, "Removed", true, "ab--cd-", "ab cd");
    split_case(word, "Isolated", true, "ab--cd-", "ab -- cd -");
    split_case(word, "MergedWithPrevious", true, "ab--cd-", "ab-- cd-");
    split_case(word, "MergedWithNext", true, "-ab--cd", "-ab --cd");
    split_case(word, "Contiguous", true, "ab--cd", "ab -- cd");
    split_case(word, "Removed", false, "ab--cd", "--");
    /* a String pattern is literal text, not a regex */
    split_case("{\"String\":\".\"}", "Isolated", false, "a.b", "a . b");
    split_case("{\"String\":\".\"}", "Isolated", false, "ab", "ab");
}

static void test_pretokenizers(void)
{
    sg_tokenizer_t *tok = wp_chars_tok("digits.json", "null", "{\"type\":\"Digits\",\"individual_digits\":true}");
    PIECES(tok, "a123b4\xD9\xA1", "a 1 2 3 b 4 \xD9\xA1");
    sg_tok_free(tok);
    tok = wp_chars_tok("digits2.json", "null", "{\"type\":\"Digits\",\"individual_digits\":false}");
    PIECES(tok, "a123b4\xD9\xA1", "a 123 b 4\xD9\xA1");
    sg_tok_free(tok);
    tok = wp_chars_tok("punct.json", "null", "{\"type\":\"Punctuation\"}");
    PIECES(tok, "a,,b$c\xE3\x80\x82", "a , , b $ c \xE3\x80\x82");
    sg_tok_free(tok);
    tok = wp_chars_tok("punct2.json", "null", "{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"}");
    PIECES(tok, "a,,b.", "a ,, b .");
    sg_tok_free(tok);
    tok = wp_chars_tok("ws.json", "null", "{\"type\":\"Whitespace\"}");
    PIECES(tok, "ab, cd!!  e_f", "ab , cd !! e_f");
    sg_tok_free(tok);
    tok = wp_chars_tok("wss.json", "null", "{\"type\":\"WhitespaceSplit\"}");
    PIECES(tok, " ab,\t cd!!\n", "ab, cd!!");
    sg_tok_free(tok);
    tok = wp_chars_tok("bert.json", "null", "{\"type\":\"BertPreTokenizer\"}");
    PIECES(tok, "ab, cd!?e", "ab , cd ! ? e");
    sg_tok_free(tok);
    tok = wp_chars_tok("cds.json", "null", "{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"-\"}");
    PIECES(tok, "a-b--c", "a b c");
    sg_tok_free(tok);
    /* Metaspace: spaces become U+2581, which starts each piece; the prepend schemes */
#define MS "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"%s\",\"split\":%s}"
    char pre[200];
    snprintf(pre, sizeof pre, MS, "always", "true");
    tok = wp_chars_tok("ms1.json", "null", pre);
    PIECES(tok, "a b  c",
           "\xE2\x96\x81"
           "a \xE2\x96\x81"
           "b \xE2\x96\x81 \xE2\x96\x81"
           "c");
    PIECES(tok, " a",
           "\xE2\x96\x81"
           "a"); /* a leading space is the prefix already */
    sg_tok_free(tok);
    snprintf(pre, sizeof pre, MS, "never", "false");
    tok = wp_chars_tok("ms2.json", "null", pre);
    PIECES(tok, "a b",
           "a\xE2\x96\x81"
           "b");
    sg_tok_free(tok);
    /* "first": only the piece at the start of the text; after an earlier split, later pieces get none */
    snprintf(pre, sizeof pre,
             "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
             "\"behavior\":\"Removed\"},{\"type\":\"Metaspace\",\"prepend_scheme\":\"first\",\"split\":true}]}");
    tok = wp_chars_tok("ms3.json", "null", pre);
    PIECES(tok, "a-b c",
           "\xE2\x96\x81"
           "a b \xE2\x96\x81"
           "c");
    sg_tok_free(tok);
    /* Metaspace "never" without split after a Split: the pieces pass through as they are */
    tok = wp_chars_tok(
        "bl.json", "null",
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
        "\"behavior\":\"Removed\"},{\"type\":\"Metaspace\",\"prepend_scheme\":\"never\",\"split\":false}]}");
    PIECES(tok, "a-b", "a b");
    sg_tok_free(tok);
}

static void norm_case(const char *normalizer, const char *text, const char *want)
{
    sg_tokenizer_t *tok = wp_chars_tok("norm.json", normalizer, "null");
    PIECES(tok, text, want);
    sg_tok_free(tok);
}

/* darts-clone units for a tiny charsmap: each node gets its own block of 256 units, so a child is base + label. */
typedef struct {
    uint32_t u[4096];
    uint32_t base[4096];
    uint32_t blocks;
} trie_t;

static void trie_add(trie_t *t, const char *key, uint32_t value)
{
    uint32_t p = 0;
    for (const unsigned char *c = (const unsigned char *)key;; c++) {
        if (!t->base[p]) {
            t->base[p] = 256 * ++t->blocks;
            t->u[p] = (t->u[p] & 0x3FF) | (p ^ t->base[p]) << 10;
        }
        if (!*c)
            break;
        uint32_t q = t->base[p] ^ *c;
        t->u[q] |= *c;
        p = q;
    }
    t->u[p] |= 1u << 8;                     /* has a leaf */
    t->u[t->base[p]] = 0x80000000u | value; /* the leaf: label 0 under the node */
}

static void test_normalizers(void)
{
    norm_case("{\"type\":\"Lowercase\"}",
              "\xC3\x80"
              "BC d",
              "\xC3\xA0"
              "bc d");
    norm_case("{\"type\":\"Strip\",\"left\":true,\"right\":false}", "  ab  ", "ab  ");
    norm_case("{\"type\":\"Strip\",\"left\":false,\"right\":true}", "  ab  ", "  ab");
    norm_case("{\"type\":\"NFD\"}", "\xC3\xA9", "e\xCC\x81");
    norm_case("{\"type\":\"NFC\"}", "e\xCC\x81", "\xC3\xA9");
    norm_case("{\"type\":\"NFKC\"}", "\xEF\xAC\x81 \xEF\xBC\xA1", "fi A");
    norm_case("{\"type\":\"NFKD\"}", "\xEF\xAC\x81\xC3\xA9", "fie\xCC\x81");
    norm_case("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFD\"},{\"type\":\"StripAccents\"}]}", "caf\xC3\xA9",
              "cafe");
    norm_case("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"}", "a   b  c d", "a b c d");
    norm_case("{\"type\":\"Replace\",\"pattern\":{\"String\":\"ab\"},\"content\":\"X\"}", "abcab", "XcX");
    norm_case("{\"type\":\"Replace\",\"pattern\":{\"String\":\".\"},\"content\":\"\"}", "a.b", "ab");
    norm_case("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
              "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]}",
              "a b",
              "\xE2\x96\x81"
              "a\xE2\x96\x81"
              "b");
    norm_case("{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", "", "");
    /* BertNormalizer: controls dropped, whitespace to ' ', CJK padded, accents stripped, lower case */
    norm_case("{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
              "\"strip_accents\":null,\"lowercase\":true}",
              "H\xC3\xA9llo\tWORLD\x01\xE4\xB8\xAD\xE6\x96\x87", "hello world \xE4\xB8\xAD  \xE6\x96\x87 ");
    norm_case("{\"type\":\"BertNormalizer\",\"lowercase\":false}", "H\xC3\xA9", "H\xC3\xA9");

    /* Precompiled: "A" -> "a", "AB" -> "x" (the longest key wins), fullwidth A -> "A" (not mapped again) */
    static trie_t t;
    memset(&t, 0, sizeof t);
    const char blob[] = "a\0x\0A";
    trie_add(&t, "A", 0);
    trie_add(&t, "AB", 2);
    trie_add(&t, "\xEF\xBC\xA1", 4);
    uint32_t units = 256 * (t.blocks + 1);
    size_t raw_len = 4 + units * 4 + sizeof blob;
    unsigned char *raw = calloc(1, raw_len);
    uint32_t tb = units * 4;
    memcpy(raw, &tb, 4); /* little-endian hosts only, as the test machines are */
    memcpy(raw + 4, t.u, units * 4);
    memcpy(raw + 4 + units * 4, blob, sizeof blob);
    char *enc64 = malloc(raw_len * 2 + 8);
    b64(raw, raw_len, enc64);
    size_t jl = strlen(enc64) + 100;
    char *json = malloc(jl);
    snprintf(json, jl, "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"}", enc64);
    norm_case(json,
              "AB A \xEF\xBC\xA1"
              "c",
              "x a Ac");
    free(json);
    free(enc64);
    free(raw);
}

static void test_wordpiece(void)
{
    const char *j = "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"WordPiece\","
                    "\"unk_token\":\"[UNK]\",\"max_input_chars_per_word\":9,\"vocab\":{\"[UNK]\":0,\"un\":1,"
                    "\"##aff\":2,\"##able\":3,\"aff\":4,\"a\":5,\"##a\":6,\"\xC3\xA9t\xC3\xA9\":7,\"##\xC3\xA9\":8}}}";
    write_file("wp.json", j, strlen(j));
    char err[512] = "";
    sg_tokenizer_t *tok = load("wp.json", err, sizeof err);
    CHECK(tok != NULL);
    if (!tok) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    CHECK(ids_are(enc, "unaffable aff", (uint32_t[]){1, 2, 3, 4}, 4));
    CHECK(ids_are(enc, "unx aaa", (uint32_t[]){0, 5, 6, 6}, 4)); /* a word with an unmatched part is [UNK] */
    CHECK(ids_are(enc, "aaaaaaaaaa", (uint32_t[]){0}, 1));       /* 10 characters > max_input_chars_per_word */
    CHECK(ids_are(enc, "\xC3\xA9t\xC3\xA9\xC3\xA9", (uint32_t[]){7, 8}, 2)); /* longest match, by characters */
    char out[64];
    ssize_t n = sg_tok_decode(tok, (uint32_t[]){1, 2, 3, 4}, 4, out, sizeof out);
    CHECK_EQ_STR(out, n, "unaffable aff");
    sg_tok_enc_free(enc);
    sg_tok_free(tok);
}

static void test_unigram(void)
{
    /* after "\u2581": "ab" is [ab] (-1.5 beats -2); "abc" is [a][bc] or [ab][c] (both -2.5, beating -3 and -5):
     * HF keeps the first path found, [a][bc] (from start 1 before start 2); unknown characters fuse into one
     * unk, or spell as bytes under byte_fallback */
#define UNI                                                                                                            \
    "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":"                       \
    "\"always\",\"split\":true},\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":%s,"                    \
    "\"vocab\":[[\"<unk>\",0.0],[\"a\",-1.0],[\"b\",-1.0],[\"ab\",-1.5],[\"abc\",-5.0],[\"c\",-1.0],"                  \
    "[\"\\u2581\",-0.5],[\"\\u2581q\",-0.4],[\"<0x78>\",0.0],[\"<0x79>\",0.0],[\"bc\",-1.5]]}}"
    char j[800];
    snprintf(j, sizeof j, UNI, "false");
    write_file("uni.json", j, strlen(j));
    char err[512] = "";
    sg_tokenizer_t *tok = load("uni.json", err, sizeof err);
    CHECK(tok != NULL);
    if (!tok) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    sg_tok_enc_t *enc = sg_tok_enc_new(tok);
    CHECK(ids_are(enc, "ab", (uint32_t[]){6, 3}, 2));
    CHECK(ids_are(enc, "abc", (uint32_t[]){6, 1, 10}, 3));
    CHECK(ids_are(enc, "bxyc", (uint32_t[]){6, 2, 0, 5}, 4));
    CHECK(ids_are(enc, "abc ab", (uint32_t[]){6, 1, 10, 6, 3}, 5));
    sg_tok_enc_free(enc);
    sg_tok_free(tok);
    snprintf(j, sizeof j, UNI, "true");
    write_file("uni2.json", j, strlen(j));
    tok = load("uni2.json", err, sizeof err);
    CHECK(tok != NULL);
    if (!tok)
        return;
    enc = sg_tok_enc_new(tok);
    CHECK(ids_are(enc, "bxy", (uint32_t[]){6, 2, 8, 9}, 4));
    CHECK(ids_are(enc, "bz", (uint32_t[]){6, 2, 0}, 3)); /* no <0x7A>: unk */
    char out[64];
    ssize_t n = sg_tok_decode(tok, (uint32_t[]){6, 1, 6, 2, 8}, 5, out, sizeof out);
    CHECK_EQ_STR(out, n, "a bx");
    sg_tok_enc_free(enc);
    sg_tok_free(tok);
}

static void test_hf_cache(void)
{
    char err[1024], path[512], hub[512];
    snprintf(hub, sizeof hub, "%s/hf", dir);
    setenv("HF_HOME", hub, 1);
    unsetenv("HF_HUB_CACHE");
    sg_tokenizer_t *tok = NULL;
    CHECK(sg_tok_load("acme/tiny-model", &tok, err, sizeof err) < 0);
    CHECK(strstr(err, "/hf/hub/models--acme--tiny-model/snapshots/*/tokenizer.json") != NULL);
    const char *parts[] = {"/hf", "/hf/hub", "/hf/hub/models--acme--tiny-model",
                           "/hf/hub/models--acme--tiny-model/snapshots",
                           "/hf/hub/models--acme--tiny-model/snapshots/0123abc"};
    for (size_t i = 0; i < SG_ARRAY_LEN(parts); i++) {
        snprintf(path, sizeof path, "%s%s", dir, parts[i]);
        mkdir(path, 0755);
    }
    write_spm("hf/hub/models--acme--tiny-model/snapshots/0123abc/tokenizer.json", false, NULL);
    CHECK(sg_tok_load("acme/tiny-model", &tok, err, sizeof err) == 0);
    if (tok)
        CHECK(strstr(sg_tok_describe(tok), "snapshots/0123abc/tokenizer.json") != NULL);
    sg_tok_free(tok);
    tok = NULL;
    CHECK(sg_tok_load("/no/such/file.json", &tok, err, sizeof err) < 0);
    CHECK(strstr(err, "/no/such/file.json") != NULL);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/surge-tok-test-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_tiktoken();
    test_tiktoken_errors();
    test_spm();
    test_hf_errors();
    test_split();
    test_pretokenizers();
    test_normalizers();
    test_wordpiece();
    test_unigram();
    test_hf_cache();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_finish("test_tokenizer");
}
