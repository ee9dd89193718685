/* The tokenizer on small handmade files: BPE order, byte fallback, added tokens, both merge formats, the HF
 * cache lookup, decode round trips, long runs (heap path), and error messages that name file, line and field. */
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
    const char *unigram = "{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}";
    write_file("uni.json", unigram, strlen(unigram));
    CHECK(load("uni.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "uni.json: model.type: \"Unigram\" is not supported") != NULL);
    const char *nfkc = "{\"normalizer\":{\"type\":\"NFKC\"},\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}";
    write_file("nfkc.json", nfkc, strlen(nfkc));
    CHECK(load("nfkc.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "normalizer.type: normalizer \"NFKC\" is not supported") != NULL);
    const char *trunc = "{\"model\":{\"type\":\"BPE\",\n\"vocab\":{\"a\":0,\n";
    write_file("trunc.json", trunc, strlen(trunc));
    CHECK(load("trunc.json", err, sizeof err) == NULL);
    CHECK(strstr(err, "trunc.json: ") != NULL && strstr(err, "malformed JSON") != NULL);
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
    test_hf_cache();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_finish("test_tokenizer");
}
