/*
 * Hugging Face tokenizer.json, read with proto/'s pull scanner (a 9 MB file loads in tens of milliseconds).
 *
 * Supported: model BPE (vocab object; merges as "a b" strings or [a, b] arrays; unk_token, byte_fallback,
 * fuse_unk, ignore_merges), normalizers NFC, Prepend("\u2581"), Replace(" " -> "\u2581") and Sequences of them,
 * pre-tokenizers Split (Regex or String pattern; Isolated, or Removed with invert), ByteLevel (with or without
 * its own GPT-2 regex), Metaspace, and Sequences of them; added_tokens with lstrip/rstrip/single_word.
 * Anything else is refused with the field that names it: ids that silently differ would be worse.
 */
#include "sg_openai.h" /* sg_json_unescape */
#include "json_scan.h"
#include "tok_internal.h"

#include <stdlib.h>

#define GPT2_PAT "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define META "\xE2\x96\x81" /* U+2581, SentencePiece's visible space */

typedef struct {
    const char *file;
    const char *data;
    size_t len;
    char *err;
    size_t errlen;
    sg_tokenizer_t *tok;

    /* what the walk found */
    const char *vocab_at, *merges_at, *added_at;
    bool bytelevel;
    bool has_split;
    char *pattern; /* malloc'd regex */
    bool drop_gaps;
    bool nfc, prepend, replace;
    bool meta, meta_split, meta_first;
    bool prefix_space;
    bool ignore_merges, byte_fallback, fuse_unk;
    char *unk_token;

    /* scratch for unescaped strings */
    char *buf;
    size_t bufcap;
} hf_t;

static int fail(hf_t *hf, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(hf_t *hf, int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sg_tok_fail(hf->err, hf->errlen, code, "%s: %s", hf->file, msg);
}

/* Line of the byte at p, for JSON syntax errors. */
static size_t line_of(const hf_t *hf, const char *p)
{
    size_t line = 1;
    for (const char *q = hf->data; q < p && q < hf->data + hf->len; q++)
        line += *q == '\n';
    return line;
}

static int bad_json(hf_t *hf, const sg_js_t *js, const char *where)
{
    return fail(hf, SG_EJSON, "%s: malformed JSON near line %zu", where, line_of(hf, js->p));
}

/* A raw JSON string decoded into hf->buf (NUL-terminated); *len gets its length. */
static int unescape(hf_t *hf, sg_slice_t raw, bool escaped, const char **out, size_t *len)
{
    if (!escaped) {
        *out = raw.base;
        *len = raw.len;
        return 0;
    }
    if (raw.len + 1 > hf->bufcap) {
        size_t cap = hf->bufcap ? hf->bufcap : 256;
        while (cap < raw.len + 1)
            cap *= 2;
        char *b = realloc(hf->buf, cap);
        if (!b)
            return SG_ENOMEM;
        hf->buf = b;
        hf->bufcap = cap;
    }
    ssize_t n = sg_json_unescape(raw.base, raw.len, hf->buf, hf->bufcap);
    if (n < 0)
        return SG_EJSON;
    hf->buf[n] = '\0';
    *out = hf->buf;
    *len = (size_t)n;
    return 0;
}

/* A string value as a malloc'd C string (NULL for JSON null). */
static int read_str(hf_t *hf, sg_js_t *js, char **out, const char *where)
{
    *out = NULL;
    int c = sg_js_peek(js);
    if (c == 'n')
        return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
    if (c != '"')
        return fail(hf, SG_EINVAL, "%s: expected a string", where);
    sg_slice_t raw;
    if (sg_js_string(js, &raw) < 0)
        return bad_json(hf, js, where);
    const char *s;
    size_t n;
    if (unescape(hf, raw, js->escaped, &s, &n) < 0)
        return bad_json(hf, js, where);
    *out = malloc(n + 1);
    if (!*out)
        return SG_ENOMEM;
    memcpy(*out, s, n);
    (*out)[n] = '\0';
    return 0;
}

static int read_bool(hf_t *hf, sg_js_t *js, bool *out, const char *where)
{
    int c = sg_js_peek(js);
    if (c != 't' && c != 'f' && c != 'n')
        return fail(hf, SG_EINVAL, "%s: expected true or false", where);
    *out = c == 't';
    return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
}

/* "type" of an object value, wherever it stands in the object; the scanner is left after the object. */
typedef struct {
    char *type;
    const char *list_at; /* "pretokenizers" / "normalizers" */
    char *regex, *string;
    char *behavior;
    bool invert, add_prefix_space, use_regex, split, split_set, use_regex_set;
    char *prepend, *content, *replacement, *prepend_scheme;
} node_t;

static void node_free(node_t *n)
{
    free(n->type);
    free(n->regex);
    free(n->string);
    free(n->behavior);
    free(n->prepend);
    free(n->content);
    free(n->replacement);
    free(n->prepend_scheme);
}

static int read_node(hf_t *hf, sg_js_t *js, node_t *n, const char *where)
{
    memset(n, 0, sizeof *n);
    n->use_regex = true;
    char w[256];
    if (sg_js_obj_begin(js) < 0)
        return fail(hf, SG_EINVAL, "%s: expected an object", where);
    int count = 0, r, rc = 0;
    sg_slice_t key;
    while (rc == 0 && (r = sg_js_obj_next(js, &count, &key)) == 1) {
        const char *k;
        size_t kl;
        if (unescape(hf, key, js->key_escaped, &k, &kl) < 0)
            return bad_json(hf, js, where);
        snprintf(w, sizeof w, "%s.%.*s", where, (int)kl, k);
#define KEY(lit) (kl == sizeof(lit) - 1 && memcmp(k, lit, kl) == 0)
        if (KEY("type")) {
            rc = read_str(hf, js, &n->type, w);
        } else if (KEY("pretokenizers") || KEY("normalizers")) {
            n->list_at = js->p;
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, w) : 0;
        } else if (KEY("pattern")) {
            sg_slice_t pk;
            int pc = 0, pr;
            if (sg_js_obj_begin(js) < 0)
                return fail(hf, SG_EINVAL, "%s: expected {\"Regex\": ...} or {\"String\": ...}", w);
            while (rc == 0 && (pr = sg_js_obj_next(js, &pc, &pk)) == 1) {
                if (SG_JS_KEY(js, pk, "Regex"))
                    rc = read_str(hf, js, &n->regex, w);
                else if (SG_JS_KEY(js, pk, "String"))
                    rc = read_str(hf, js, &n->string, w);
                else
                    rc = sg_js_skip(js) < 0 ? bad_json(hf, js, w) : 0;
            }
            if (rc == 0 && pr < 0)
                rc = bad_json(hf, js, w);
        } else if (KEY("behavior")) {
            rc = read_str(hf, js, &n->behavior, w);
        } else if (KEY("invert")) {
            rc = read_bool(hf, js, &n->invert, w);
        } else if (KEY("add_prefix_space")) {
            rc = read_bool(hf, js, &n->add_prefix_space, w);
        } else if (KEY("use_regex")) {
            rc = read_bool(hf, js, &n->use_regex, w);
            n->use_regex_set = true;
        } else if (KEY("split")) {
            rc = read_bool(hf, js, &n->split, w);
            n->split_set = true;
        } else if (KEY("prepend")) {
            rc = read_str(hf, js, &n->prepend, w);
        } else if (KEY("content")) {
            rc = read_str(hf, js, &n->content, w);
        } else if (KEY("replacement")) {
            rc = read_str(hf, js, &n->replacement, w);
        } else if (KEY("prepend_scheme")) {
            rc = read_str(hf, js, &n->prepend_scheme, w);
        } else {
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, w) : 0;
        }
#undef KEY
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, js, where);
    if (rc == 0 && !n->type)
        rc = fail(hf, SG_EINVAL, "%s.type: missing", where);
    return rc;
}

static int walk_normalizer(hf_t *hf, sg_js_t *js, const char *where);

static int walk_list(hf_t *hf, const char *at, const char *where, int (*one)(hf_t *, sg_js_t *, const char *))
{
    sg_js_t js;
    sg_js_init(&js, at, (size_t)(hf->data + hf->len - at));
    if (sg_js_arr_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "%s: expected an array", where);
    int count = 0, r, rc = 0;
    char w[256];
    while (rc == 0 && (r = sg_js_arr_next(&js, &count)) == 1) {
        snprintf(w, sizeof w, "%s[%d]", where, count - 1);
        rc = one(hf, &js, w);
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, where);
    return rc;
}

static int walk_normalizer(hf_t *hf, sg_js_t *js, const char *where)
{
    if (sg_js_peek(js) == 'n')
        return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
    node_t n;
    int rc = read_node(hf, js, &n, where);
    char w[300];
    snprintf(w, sizeof w, "%s.type", where);
    if (rc < 0) {
    } else if (strcmp(n.type, "Sequence") == 0) {
        snprintf(w, sizeof w, "%s.normalizers", where);
        rc = n.list_at ? walk_list(hf, n.list_at, w, walk_normalizer) : fail(hf, SG_EINVAL, "%s: missing", w);
    } else if (strcmp(n.type, "NFC") == 0) {
        hf->nfc = true;
    } else if (strcmp(n.type, "Prepend") == 0) {
        if (!n.prepend || strcmp(n.prepend, META) != 0)
            rc = fail(hf, SG_EINVAL, "%s.prepend: only \"\\u2581\" is supported", where);
        hf->prepend = true;
    } else if (strcmp(n.type, "Replace") == 0) {
        if (!n.string || strcmp(n.string, " ") != 0 || !n.content || strcmp(n.content, META) != 0)
            rc = fail(hf, SG_EINVAL, "%s: only Replace(\" \" -> \"\\u2581\") is supported", where);
        hf->replace = true;
    } else {
        rc = fail(hf, SG_EINVAL, "%s: normalizer \"%s\" is not supported", w, n.type);
    }
    node_free(&n);
    return rc;
}

/* The regex text matching s literally. */
static char *quote_regex(const char *s)
{
    size_t n = strlen(s);
    char *q = malloc(n * 2 + 1), *w = q;
    if (!q)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strchr("\\^$.|?*+()[]{}", s[i]))
            *w++ = '\\';
        *w++ = s[i];
    }
    *w = '\0';
    return q;
}

static int walk_pretok(hf_t *hf, sg_js_t *js, const char *where)
{
    if (sg_js_peek(js) == 'n')
        return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
    node_t n;
    int rc = read_node(hf, js, &n, where);
    char w[300];
    snprintf(w, sizeof w, "%s.type", where);
    if (rc < 0) {
    } else if (strcmp(n.type, "Sequence") == 0) {
        snprintf(w, sizeof w, "%s.pretokenizers", where);
        rc = n.list_at ? walk_list(hf, n.list_at, w, walk_pretok) : fail(hf, SG_EINVAL, "%s: missing", w);
    } else if (strcmp(n.type, "Split") == 0) {
        const char *b = n.behavior ? n.behavior : "";
        if (hf->has_split)
            rc = fail(hf, SG_EINVAL, "%s: a second splitting pre-tokenizer is not supported", where);
        else if (!n.regex && !n.string)
            rc = fail(hf, SG_EINVAL, "%s.pattern: missing", where);
        else if (strcmp(b, "Isolated") == 0 && !n.invert)
            hf->drop_gaps = false;
        else if (strcmp(b, "Removed") == 0 && n.invert)
            hf->drop_gaps = true;
        else
            rc = fail(hf, SG_EINVAL, "%s.behavior: \"%s\" with invert %s is not supported", where, b,
                      n.invert ? "true" : "false");
        if (rc == 0) {
            hf->has_split = true;
            hf->pattern = n.regex ? strdup(n.regex) : quote_regex(n.string);
            if (!hf->pattern)
                rc = SG_ENOMEM;
        }
    } else if (strcmp(n.type, "ByteLevel") == 0) {
        hf->bytelevel = true;
        if (n.use_regex) {
            if (hf->has_split)
                rc = fail(hf, SG_EINVAL, "%s.use_regex: a second splitting pre-tokenizer is not supported", where);
            hf->has_split = true;
            hf->pattern = strdup(GPT2_PAT);
            if (rc == 0 && !hf->pattern)
                rc = SG_ENOMEM;
        }
        if (rc == 0 && n.add_prefix_space) {
            if (hf->has_split && !n.use_regex)
                rc =
                    fail(hf, SG_EINVAL, "%s.add_prefix_space: supported only on a ByteLevel that splits itself", where);
            hf->prefix_space = true;
        }
    } else if (strcmp(n.type, "Metaspace") == 0) {
        if (n.replacement && strcmp(n.replacement, META) != 0)
            rc = fail(hf, SG_EINVAL, "%s.replacement: only \"\\u2581\" is supported", where);
        hf->meta = true;
        hf->replace = true;
        const char *scheme = n.prepend_scheme ? n.prepend_scheme : n.add_prefix_space ? "always" : "never";
        if (strcmp(scheme, "always") == 0) {
            hf->prepend = true;
        } else if (strcmp(scheme, "first") == 0) {
            hf->prepend = true;
            hf->meta_first = true;
        } else if (strcmp(scheme, "never") != 0 && rc == 0) {
            rc = fail(hf, SG_EINVAL, "%s.prepend_scheme: \"%s\" is not supported", where, scheme);
        }
        hf->meta_split = n.split_set ? n.split : true;
    } else {
        rc = fail(hf, SG_EINVAL, "%s: pre-tokenizer \"%s\" is not supported", w, n.type);
    }
    node_free(&n);
    return rc;
}

static int walk_model(hf_t *hf, sg_js_t *js)
{
    if (sg_js_obj_begin(js) < 0)
        return fail(hf, SG_EINVAL, "model: expected an object");
    int count = 0, r, rc = 0;
    sg_slice_t key;
    char *type = NULL;
    while (rc == 0 && (r = sg_js_obj_next(js, &count, &key)) == 1) {
        if (SG_JS_KEY(js, key, "type")) {
            rc = read_str(hf, js, &type, "model.type");
        } else if (SG_JS_KEY(js, key, "vocab")) {
            hf->vocab_at = js->p;
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model.vocab") : 0;
        } else if (SG_JS_KEY(js, key, "merges")) {
            hf->merges_at = js->p;
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model.merges") : 0;
        } else if (SG_JS_KEY(js, key, "unk_token")) {
            rc = read_str(hf, js, &hf->unk_token, "model.unk_token");
        } else if (SG_JS_KEY(js, key, "byte_fallback")) {
            rc = read_bool(hf, js, &hf->byte_fallback, "model.byte_fallback");
        } else if (SG_JS_KEY(js, key, "fuse_unk")) {
            rc = read_bool(hf, js, &hf->fuse_unk, "model.fuse_unk");
        } else if (SG_JS_KEY(js, key, "ignore_merges")) {
            rc = read_bool(hf, js, &hf->ignore_merges, "model.ignore_merges");
        } else if (SG_JS_KEY(js, key, "dropout")) {
            int64_t v = 0;
            bool is_int = false;
            int c = sg_js_peek(js);
            if (c == 'n')
                rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model.dropout") : 0;
            else if (sg_js_number(js, &v, &is_int) < 0 || !is_int || v != 0)
                rc = fail(hf, SG_EINVAL, "model.dropout: BPE dropout is not supported (ids would be random)");
        } else if (SG_JS_KEY(js, key, "continuing_subword_prefix") || SG_JS_KEY(js, key, "end_of_word_suffix")) {
            char *s = NULL;
            rc = read_str(hf, js, &s, "model");
            if (rc == 0 && s && *s)
                rc = fail(hf, SG_EINVAL, "model.%.*s: \"%s\" is not supported", (int)key.len, key.base, s);
            free(s);
        } else {
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model") : 0;
        }
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, js, "model");
    if (rc == 0 && type && strcmp(type, "BPE") != 0)
        rc = fail(hf, SG_EINVAL, "model.type: \"%s\" is not supported (only BPE)", type);
    free(type);
    return rc;
}

/* GPT-2's byte <-> printable character table: code point -> byte, -1 where none. */
static int16_t cp_to_byte[324];

static void init_byte_map(void)
{
    if (cp_to_byte[0] != 0 || cp_to_byte['!'] == '!')
        return;
    for (int i = 0; i < 324; i++)
        cp_to_byte[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if (printable)
            cp_to_byte[b] = (int16_t)b;
        else
            cp_to_byte[256 + extra++] = (int16_t)b;
    }
}

/* Byte-level token text -> raw bytes into out (at least len bytes). Returns the length or -1. */
static ssize_t bytelevel_decode(const char *s, size_t len, char *out)
{
    size_t w = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        if (p[i] < 0x80) {
            cp = p[i];
            i++;
        } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < len) {
            cp = (uint32_t)(p[i] & 0x1F) << 6 | (p[i + 1] & 0x3F);
            i += 2;
        } else {
            return -1;
        }
        if (cp >= 324 || cp_to_byte[cp] < 0)
            return -1;
        out[w++] = (char)cp_to_byte[cp];
    }
    return (ssize_t)w;
}

/* <0xNN> */
static int byte_token(const char *s, size_t len)
{
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* SentencePiece-style decoded text: "\u2581" -> ' ', <0xNN> -> the byte. */
static size_t spm_decode(const char *s, size_t len, char *out)
{
    int b = byte_token(s, len);
    if (b >= 0) {
        out[0] = (char)b;
        return 1;
    }
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && memcmp(s + i, META, 3) == 0) {
            out[w++] = ' ';
            i += 3;
        } else {
            out[w++] = s[i++];
        }
    }
    return w;
}

static int load_vocab(hf_t *hf)
{
    sg_tokenizer_t *tok = hf->tok;
    sg_js_t js;
    sg_js_init(&js, hf->vocab_at, (size_t)(hf->data + hf->len - hf->vocab_at));
    if (sg_js_obj_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "model.vocab: expected an object of token: id");
    int count = 0, r, rc = 0;
    sg_slice_t key;
    char tmp[1024];
    while (rc == 0 && (r = sg_js_obj_next(&js, &count, &key)) == 1) {
        const char *k;
        size_t kl;
        if (unescape(hf, key, js.key_escaped, &k, &kl) < 0)
            return bad_json(hf, &js, "model.vocab");
        int64_t id;
        bool is_int;
        if (sg_js_peek(&js) < 0 || sg_js_number(&js, &id, &is_int) < 0 || !is_int || id < 0 || id >= SG_TOK_MAX_IDS)
            return fail(hf, SG_EINVAL, "model.vocab[\"%.*s\"]: expected an id from 0 to %u", (int)kl, k,
                        SG_TOK_MAX_IDS - 1);
        if (kl > sizeof tmp)
            return fail(hf, SG_EINVAL, "model.vocab[\"%.60s...\"]: token longer than %zu bytes", k, sizeof tmp);
        if (tok->kind == SG_TOK_BYTELEVEL) {
            ssize_t n = bytelevel_decode(k, kl, tmp);
            /* a token outside the byte alphabet (an added token kept in the vocab) keeps its text */
            rc = n >= 0 ? sg_tok_set_bytes(tok, (uint32_t)id, tmp, (size_t)n)
                        : sg_tok_set_bytes(tok, (uint32_t)id, k, kl);
        } else {
            size_t n = spm_decode(k, kl, tmp);
            rc = sg_tok_set_bytes(tok, (uint32_t)id, tmp, n);
            if (rc == 0)
                rc = sg_tok_set_key(tok, (uint32_t)id, k, kl);
        }
        if (rc == SG_EINVAL)
            return fail(hf, SG_EINVAL, "model.vocab[\"%.*s\"]: id %lld given to two tokens", (int)kl, k, (long long)id);
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "model.vocab");
    return rc;
}

/* One merge side: its id, through the same key the vocabulary map uses. */
static uint32_t merge_side(hf_t *hf, const char *s, size_t len)
{
    if (hf->tok->kind == SG_TOK_BYTELEVEL) {
        char tmp[1024];
        if (len > sizeof tmp)
            return SG_TOK_NONE;
        ssize_t n = bytelevel_decode(s, len, tmp);
        return n < 0 ? SG_TOK_NONE : sg_tok_lookup(hf->tok, tmp, (size_t)n);
    }
    return sg_tok_lookup(hf->tok, s, len);
}

static int add_merge(hf_t *hf, uint32_t rank, const char *a, size_t al, const char *b, size_t bl)
{
    uint32_t ia = merge_side(hf, a, al), ib = merge_side(hf, b, bl);
    if (ia == SG_TOK_NONE || ib == SG_TOK_NONE) {
        const char *u = ia == SG_TOK_NONE ? a : b;
        int ul = (int)(ia == SG_TOK_NONE ? al : bl);
        return fail(hf, SG_EINVAL, "model.merges[%u]: unknown token \"%.*s\"", rank, ul > 80 ? 80 : ul, u);
    }
    char cat[2048];
    if (al + bl > sizeof cat)
        return fail(hf, SG_EINVAL, "model.merges[%u]: token too long", rank);
    memcpy(cat, a, al);
    memcpy(cat + al, b, bl);
    uint32_t m = merge_side(hf, cat, al + bl);
    if (m == SG_TOK_NONE)
        return fail(hf, SG_EINVAL, "model.merges[%u]: the merged token \"%.*s\" is not in model.vocab", rank,
                    (int)(al + bl > 80 ? 80 : al + bl), cat);
    return sg_tok_add_pair(hf->tok, ia, ib, rank, m);
}

static int load_merges(hf_t *hf)
{
    sg_js_t js;
    sg_js_init(&js, hf->merges_at, (size_t)(hf->data + hf->len - hf->merges_at));
    if (sg_js_arr_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "model.merges: expected an array");
    int count = 0, r, rc = 0;
    char first[1024];
    while (rc == 0 && (r = sg_js_arr_next(&js, &count)) == 1) {
        uint32_t rank = (uint32_t)count - 1;
        int c = sg_js_peek(&js);
        sg_slice_t raw;
        const char *s;
        size_t n;
        if (c == '"') {
            if (sg_js_string(&js, &raw) < 0 || unescape(hf, raw, js.escaped, &s, &n) < 0)
                return bad_json(hf, &js, "model.merges");
            const char *sp = memchr(s, ' ', n);
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
                return fail(hf, SG_EINVAL, "model.merges[%u]: expected \"LEFT RIGHT\"", rank);
            rc = add_merge(hf, rank, s, (size_t)(sp - s), sp + 1, n - (size_t)(sp + 1 - s));
        } else if (c == '[') {
            int ac = 0, ar;
            size_t fl = 0;
            sg_js_arr_begin(&js);
            while (rc == 0 && (ar = sg_js_arr_next(&js, &ac)) == 1) {
                if (ac > 2 || sg_js_peek(&js) != '"')
                    return fail(hf, SG_EINVAL, "model.merges[%u]: expected [LEFT, RIGHT]", rank);
                if (sg_js_string(&js, &raw) < 0 || unescape(hf, raw, js.escaped, &s, &n) < 0)
                    return bad_json(hf, &js, "model.merges");
                if (ac == 1) {
                    if (n > sizeof first)
                        return fail(hf, SG_EINVAL, "model.merges[%u]: token too long", rank);
                    memcpy(first, s, n);
                    fl = n;
                } else {
                    rc = add_merge(hf, rank, first, fl, s, n);
                }
            }
            if (rc == 0 && ar < 0)
                return bad_json(hf, &js, "model.merges");
            if (rc == 0 && ac != 2)
                return fail(hf, SG_EINVAL, "model.merges[%u]: expected [LEFT, RIGHT]", rank);
        } else {
            return fail(hf, SG_EINVAL, "model.merges[%u]: expected \"LEFT RIGHT\" or [LEFT, RIGHT]", rank);
        }
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "model.merges");
    return rc;
}

static int load_added(hf_t *hf)
{
    sg_tokenizer_t *tok = hf->tok;
    sg_js_t js;
    sg_js_init(&js, hf->added_at, (size_t)(hf->data + hf->len - hf->added_at));
    if (sg_js_peek(&js) == 'n')
        return 0;
    if (sg_js_arr_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "added_tokens: expected an array");
    sg_tok_added_t *list = NULL;
    char *text = NULL;
    size_t n = 0, cap = 0, tlen = 0, tcap = 0;
    int count = 0, r, rc = 0;
    char w[64];
    while (rc == 0 && (r = sg_js_arr_next(&js, &count)) == 1) {
        snprintf(w, sizeof w, "added_tokens[%d]", count - 1);
        sg_tok_added_t a = {0};
        int64_t id = -1;
        char *content = NULL;
        bool special = false;
        int oc = 0, orr;
        sg_slice_t key;
        if (sg_js_obj_begin(&js) < 0) {
            rc = fail(hf, SG_EINVAL, "%s: expected an object", w);
            break;
        }
        while (rc == 0 && (orr = sg_js_obj_next(&js, &oc, &key)) == 1) {
            bool is_int;
            if (SG_JS_KEY(&js, key, "id")) {
                if (sg_js_peek(&js) < 0 || sg_js_number(&js, &id, &is_int) < 0 || !is_int || id < 0 ||
                    id >= SG_TOK_MAX_IDS)
                    rc = fail(hf, SG_EINVAL, "%s.id: expected an id", w);
            } else if (SG_JS_KEY(&js, key, "content")) {
                free(content);
                rc = read_str(hf, &js, &content, w);
            } else if (SG_JS_KEY(&js, key, "lstrip")) {
                rc = read_bool(hf, &js, &a.lstrip, w);
            } else if (SG_JS_KEY(&js, key, "rstrip")) {
                rc = read_bool(hf, &js, &a.rstrip, w);
            } else if (SG_JS_KEY(&js, key, "single_word")) {
                rc = read_bool(hf, &js, &a.single_word, w);
            } else if (SG_JS_KEY(&js, key, "normalized")) {
                rc = read_bool(hf, &js, &a.normalized, w);
            } else if (SG_JS_KEY(&js, key, "special")) {
                rc = read_bool(hf, &js, &special, w);
            } else {
                rc = sg_js_skip(&js) < 0 ? bad_json(hf, &js, w) : 0;
            }
        }
        if (rc == 0 && orr < 0)
            rc = bad_json(hf, &js, w);
        if (rc == 0 && (id < 0 || !content))
            rc = fail(hf, SG_EINVAL, "%s: needs id and content", w);
        if (rc == 0) {
            size_t cl = strlen(content);
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                sg_tok_added_t *l = realloc(list, cap * sizeof *l);
                if (!l)
                    rc = SG_ENOMEM;
                else
                    list = l;
            }
            if (rc == 0 && tlen + cl > tcap) {
                tcap = (tlen + cl) * 2 + 64;
                char *t = realloc(text, tcap);
                if (!t)
                    rc = SG_ENOMEM;
                else
                    text = t;
            }
            if (rc == 0) {
                memcpy(text + tlen, content, cl);
                a.off = (uint32_t)tlen;
                a.len = (uint32_t)cl;
                a.id = (uint32_t)id;
                tlen += cl;
                list[n++] = a;
                /* the vocabulary's own entry for this id (if any) decodes; else the content does */
                if ((uint32_t)id >= tok->n_ids || !tok->has[id])
                    rc = sg_tok_set_bytes(tok, (uint32_t)id, content, cl);
            }
        }
        free(content);
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "added_tokens");
    if (rc == 0)
        rc = sg_tok_set_added(tok, list, (uint32_t)n, text);
    free(list);
    free(text);
    return rc;
}

static int walk_top(hf_t *hf)
{
    sg_js_t js;
    sg_js_init(&js, hf->data, hf->len);
    if (sg_js_obj_begin(&js) < 0)
        return fail(hf, SG_EJSON, "not a JSON object");
    int count = 0, r, rc = 0;
    sg_slice_t key;
    const char *norm_at = NULL, *pre_at = NULL;
    bool have_model = false;
    while (rc == 0 && (r = sg_js_obj_next(&js, &count, &key)) == 1) {
        if (SG_JS_KEY(&js, key, "model")) {
            have_model = true;
            rc = walk_model(hf, &js);
            continue;
        }
        if (SG_JS_KEY(&js, key, "added_tokens"))
            hf->added_at = js.p;
        else if (SG_JS_KEY(&js, key, "normalizer"))
            norm_at = js.p;
        else if (SG_JS_KEY(&js, key, "pre_tokenizer"))
            pre_at = js.p;
        if (sg_js_skip(&js) < 0)
            rc = bad_json(hf, &js, "top level");
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "top level");
    if (rc == 0 && !have_model)
        rc = fail(hf, SG_EINVAL, "model: missing");
    if (rc == 0 && !hf->vocab_at)
        rc = fail(hf, SG_EINVAL, "model.vocab: missing");
    if (rc == 0 && norm_at) {
        sg_js_t sub;
        sg_js_init(&sub, norm_at, (size_t)(hf->data + hf->len - norm_at));
        rc = walk_normalizer(hf, &sub, "normalizer");
    }
    if (rc == 0 && pre_at) {
        sg_js_t sub;
        sg_js_init(&sub, pre_at, (size_t)(hf->data + hf->len - pre_at));
        rc = walk_pretok(hf, &sub, "pre_tokenizer");
    }
    return rc;
}

/*
 * Whether some token holds "\u2581" right after another character. When none does, no merge can ever join a
 * character to a following "\u2581" (every merge makes a token), so the encoder may cut the text there and
 * cache the pieces: the ids stay exactly those of one BPE over the whole segment.
 */
static bool meta_inside(const sg_tokenizer_t *tok, uint32_t n)
{
    for (uint32_t id = 0; id < n; id++) {
        if (!tok->has[id])
            continue;
        const char *k = tok->kblob + tok->koff[id];
        uint32_t kl = tok->klen[id];
        for (uint32_t i = 1; i + 3 <= kl; i++) {
            if (memcmp(k + i, META, 3) != 0)
                continue;
            if (i < 3 || memcmp(k + i - 3, META, 3) != 0)
                return true;
            i += 2;
        }
    }
    return false;
}

int sg_tok_load_hf(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err, size_t errlen)
{
    init_byte_map();
    hf_t hf = {.file = sg_tok_basename(path), .data = data, .len = len, .err = err, .errlen = errlen};
    int rc = walk_top(&hf);
    if (rc == 0 && hf.bytelevel && (hf.meta || hf.prepend || hf.replace))
        rc = fail(&hf, SG_EINVAL, "pre_tokenizer: ByteLevel mixed with SentencePiece-style spaces is not supported");
    if (rc == 0) {
        hf.tok = sg_tok_new(hf.bytelevel ? SG_TOK_BYTELEVEL : SG_TOK_SPM);
        if (!hf.tok)
            rc = SG_ENOMEM;
    }
    sg_tokenizer_t *tok = hf.tok;
    if (rc == 0)
        rc = load_vocab(&hf);
    uint32_t n_vocab = tok ? tok->n_ids : 0;
    uint32_t dup = SG_TOK_NONE;
    if (rc == 0)
        rc = sg_tok_build_vmap(tok, n_vocab, &dup);
    if (rc == 0 && tok->kind == SG_TOK_BYTELEVEL) {
        for (int b = 0; rc == 0 && b < 256; b++) {
            char c = (char)b;
            tok->byte_id[b] = sg_tok_lookup(tok, &c, 1);
            if (tok->byte_id[b] == SG_TOK_NONE)
                rc = fail(&hf, SG_EINVAL, "model.vocab: no token for the byte 0x%02X (not a byte-level vocabulary)", b);
        }
    } else if (rc == 0) {
        for (int b = 0; b < 256; b++) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", b);
            tok->byte_id[b] = sg_tok_lookup(tok, name, 6);
        }
        if (hf.unk_token) {
            tok->unk_id = sg_tok_lookup(tok, hf.unk_token, strlen(hf.unk_token));
            if (tok->unk_id == SG_TOK_NONE)
                rc = fail(&hf, SG_EINVAL, "model.unk_token: \"%s\" is not in model.vocab", hf.unk_token);
        }
    }
    if (rc == 0 && tok->kind == SG_TOK_SPM)
        tok->spm_cut = !meta_inside(tok, n_vocab);
    if (rc == 0)
        rc = sg_tok_pairs_init(tok, 1024);
    if (rc == 0 && hf.merges_at)
        rc = load_merges(&hf);
    if (rc == 0 && hf.added_at)
        rc = load_added(&hf);
    if (rc == 0 && hf.pattern) {
        char msg[300];
        rc = sg_tok_set_regex(tok, hf.pattern, msg, sizeof msg);
        if (rc < 0)
            rc = fail(&hf, rc, "pre_tokenizer: %s", msg);
    }
    if (rc == 0) {
        tok->direct = hf.ignore_merges;
        tok->drop_gaps = hf.drop_gaps;
        tok->nfc = hf.nfc;
        tok->spm_prepend = hf.prepend;
        tok->spm_prepend_first = hf.meta_first;
        tok->spm_replace = hf.replace;
        tok->spm_split = hf.meta && hf.meta_split;
        tok->spm_meta = hf.meta;
        tok->prefix_space = hf.prefix_space;
        tok->byte_fallback = hf.byte_fallback;
        tok->fuse_unk = hf.fuse_unk;
        size_t dl = strlen(path) + 64;
        tok->desc = malloc(dl);
        if (!tok->desc)
            rc = SG_ENOMEM;
        else
            snprintf(tok->desc, dl, "%s (tokenizer.json, %s)",
                     tok->kind == SG_TOK_BYTELEVEL ? "byte-level BPE" : "SentencePiece BPE", path);
    }
    (void)dup; /* a byte-level text shared by two ids: the lower id encodes, both decode */
    if (rc == SG_ENOMEM)
        fail(&hf, rc, "out of memory");
    free(hf.pattern);
    free(hf.unk_token);
    free(hf.buf);
    if (rc < 0) {
        sg_tok_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}
