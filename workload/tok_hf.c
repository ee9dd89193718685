/*
 * Hugging Face tokenizer.json, read with proto/'s pull scanner (a 33 MB file loads in about a hundred ms).
 *
 * Supported, as HF tokenizers runs them:
 *   - models: BPE (vocab object; merges as "a b" strings or [a, b] arrays; unk_token, byte_fallback, fuse_unk,
 *     ignore_merges), Unigram (vocab of [piece, score]; unk_id, byte_fallback), WordPiece (unk_token,
 *     continuing_subword_prefix, max_input_chars_per_word);
 *   - normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace (String or Regex), Prepend,
 *     Precompiled (SentencePiece charsmap), BertNormalizer, Sequence;
 *   - pre-tokenizers: Split (String or Regex; Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous;
 *     invert), Metaspace, ByteLevel (with or without its own GPT-2 regex, add_prefix_space), Digits,
 *     Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, BertPreTokenizer, Sequence;
 *   - added_tokens with lstrip/rstrip/single_word.
 * Anything else is refused with the path of the field that names it ("pre_tokenizer.pretokenizers[1]: type
 * \"Foo\" is not supported"): ids that silently differ would be worse.
 */
#include "sg_openai.h" /* sg_json_unescape */
#include "json_scan.h"
#include "tok_internal.h"

#include <stdlib.h>

#define GPT2_PAT "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define META "\xE2\x96\x81" /* U+2581, SentencePiece's visible space */
#define TOKEN_MAX 8192      /* bytes of one token's text, the longest accepted */

typedef struct {
    const char *file;
    const char *data;
    size_t len;
    char *err;
    size_t errlen;
    sg_tokenizer_t *tok;

    /* what the walk found */
    const char *vocab_at, *merges_at, *added_at;
    enum sg_tok_model model;
    bool bytelevel; /* a ByteLevel pre-tokenizer: the model's alphabet is bytes */
    bool spm_space; /* a Metaspace pre-tokenizer */
    sg_tok_norm_t norms[SG_TOK_MAX_STAGES];
    uint32_t n_norms;
    sg_tok_pre_t pres[SG_TOK_MAX_STAGES];
    uint32_t n_pres;
    bool ignore_merges, byte_fallback, fuse_unk;
    char *unk_token;
    int64_t unk_id; /* Unigram; -1: none */
    char *wp_prefix;
    int64_t wp_max_chars;

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
    char *prepend, *content, *replacement, *prepend_scheme, *charsmap, *delimiter;
    bool individual_digits, left, right, clean_text, chinese, strip_accents, strip_accents_set, lowercase;
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
    free(n->charsmap);
    free(n->delimiter);
}

static int read_node(hf_t *hf, sg_js_t *js, node_t *n, const char *where)
{
    memset(n, 0, sizeof *n);
    n->use_regex = true;
    n->clean_text = n->chinese = n->lowercase = true; /* BertNormalizer's defaults */
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
        } else if (KEY("precompiled_charsmap")) {
            rc = read_str(hf, js, &n->charsmap, w);
        } else if (KEY("delimiter")) {
            rc = read_str(hf, js, &n->delimiter, w);
        } else if (KEY("individual_digits")) {
            rc = read_bool(hf, js, &n->individual_digits, w);
        } else if (KEY("left")) {
            rc = read_bool(hf, js, &n->left, w);
        } else if (KEY("right")) {
            rc = read_bool(hf, js, &n->right, w);
        } else if (KEY("clean_text")) {
            rc = read_bool(hf, js, &n->clean_text, w);
        } else if (KEY("handle_chinese_chars")) {
            rc = read_bool(hf, js, &n->chinese, w);
        } else if (KEY("lowercase")) {
            rc = read_bool(hf, js, &n->lowercase, w);
        } else if (KEY("strip_accents")) {
            n->strip_accents_set = sg_js_peek(js) != 'n';
            rc = read_bool(hf, js, &n->strip_accents, w);
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

static sg_tok_norm_t *new_norm(hf_t *hf, enum sg_tok_norm_type type, const char *where)
{
    if (hf->n_norms == SG_TOK_MAX_STAGES) {
        fail(hf, SG_EINVAL, "%s: more than %d normalizers", where, SG_TOK_MAX_STAGES);
        return NULL;
    }
    sg_tok_norm_t *nm = &hf->norms[hf->n_norms++];
    memset(nm, 0, sizeof *nm);
    nm->type = type;
    return nm;
}

static int dup_str(const char *s, char **out, size_t *len)
{
    *len = strlen(s);
    *out = malloc(*len + 1);
    if (!*out)
        return SG_ENOMEM;
    memcpy(*out, s, *len + 1);
    return 0;
}

/* Precompiled: base64 of [u32 trie bytes][darts-clone units][NUL-terminated replacements]. */
static int load_charsmap(hf_t *hf, sg_tok_norm_t *nm, const char *b64, const char *where)
{
    size_t n = strlen(b64);
    if (n == 0)
        return 0;
    unsigned char *raw = malloc(n / 4 * 3 + 3);
    if (!raw)
        return SG_ENOMEM;
    ssize_t len = sg_tok_b64decode(b64, n, raw, n / 4 * 3 + 3);
    uint32_t trie_bytes = 0;
    if (len >= 4)
        trie_bytes = (uint32_t)raw[0] | (uint32_t)raw[1] << 8 | (uint32_t)raw[2] << 16 | (uint32_t)raw[3] << 24;
    if (len < 4 || trie_bytes % 4 != 0 || trie_bytes > (size_t)len - 4) {
        free(raw);
        return fail(hf, SG_EINVAL, "%s.precompiled_charsmap: not a SentencePiece charsmap", where);
    }
    nm->trie_units = trie_bytes / 4;
    nm->trie = malloc(trie_bytes + 4);
    nm->blob_len = (uint32_t)((size_t)len - 4 - trie_bytes);
    nm->blob = malloc(nm->blob_len + 1);
    if (!nm->trie || !nm->blob) {
        free(raw);
        return SG_ENOMEM;
    }
    for (uint32_t i = 0; i < nm->trie_units; i++) {
        const unsigned char *u = raw + 4 + 4 * (size_t)i;
        nm->trie[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    memcpy(nm->blob, raw + 4 + trie_bytes, nm->blob_len);
    nm->blob[nm->blob_len] = '\0';
    free(raw);
    return 0;
}

static int walk_normalizer(hf_t *hf, sg_js_t *js, const char *where)
{
    if (sg_js_peek(js) == 'n')
        return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
    node_t n;
    int rc = read_node(hf, js, &n, where);
    char w[300];
    sg_tok_norm_t *nm = NULL;
    const char *t = rc < 0 ? "" : n.type;
    if (rc < 0) {
    } else if (strcmp(t, "Sequence") == 0) {
        snprintf(w, sizeof w, "%s.normalizers", where);
        rc = n.list_at ? walk_list(hf, n.list_at, w, walk_normalizer) : fail(hf, SG_EINVAL, "%s: missing", w);
    } else if (strcmp(t, "NFC") == 0 || strcmp(t, "NFD") == 0 || strcmp(t, "NFKC") == 0 || strcmp(t, "NFKD") == 0) {
        enum sg_tok_norm_type ty = strcmp(t, "NFC") == 0    ? SG_NORM_NFC
                                   : strcmp(t, "NFD") == 0  ? SG_NORM_NFD
                                   : strcmp(t, "NFKC") == 0 ? SG_NORM_NFKC
                                                            : SG_NORM_NFKD;
        rc = new_norm(hf, ty, where) ? 0 : SG_EINVAL;
    } else if (strcmp(t, "Lowercase") == 0) {
        rc = new_norm(hf, SG_NORM_LOWERCASE, where) ? 0 : SG_EINVAL;
    } else if (strcmp(t, "StripAccents") == 0) {
        rc = new_norm(hf, SG_NORM_STRIP_ACCENTS, where) ? 0 : SG_EINVAL;
    } else if (strcmp(t, "Strip") == 0) {
        if ((nm = new_norm(hf, SG_NORM_STRIP, where))) {
            nm->left = n.left;
            nm->right = n.right;
        } else {
            rc = SG_EINVAL;
        }
    } else if (strcmp(t, "Prepend") == 0) {
        if (!n.prepend)
            rc = fail(hf, SG_EINVAL, "%s.prepend: missing", where);
        else if (!(nm = new_norm(hf, SG_NORM_PREPEND, where)))
            rc = SG_EINVAL;
        else
            rc = dup_str(n.prepend, &nm->content, &nm->content_len);
    } else if (strcmp(t, "Replace") == 0) {
        if ((!n.regex && !n.string) || !n.content) {
            rc = fail(hf, SG_EINVAL, "%s: needs pattern and content", where);
        } else if (!(nm = new_norm(hf, SG_NORM_REPLACE, where))) {
            rc = SG_EINVAL;
        } else {
            rc = dup_str(n.content, &nm->content, &nm->content_len);
            if (rc == 0 && n.string)
                rc = dup_str(n.string, &nm->pattern, &nm->pattern_len);
            if (rc == 0 && n.regex) {
                char msg[300];
                if (sg_tok_compile(n.regex, PCRE2_ZERO_TERMINATED, &nm->re, msg, sizeof msg) < 0)
                    rc = fail(hf, SG_EINVAL, "%s.pattern: %s", where, msg);
            }
        }
    } else if (strcmp(t, "Precompiled") == 0) {
        if (!(nm = new_norm(hf, SG_NORM_PRECOMPILED, where)))
            rc = SG_EINVAL;
        else if (n.charsmap)
            rc = load_charsmap(hf, nm, n.charsmap, where);
    } else if (strcmp(t, "BertNormalizer") == 0) {
        if ((nm = new_norm(hf, SG_NORM_BERT, where))) {
            nm->clean_text = n.clean_text;
            nm->chinese = n.chinese;
            nm->lowercase = n.lowercase;
            nm->strip_accents = n.strip_accents_set ? n.strip_accents : n.lowercase;
        } else {
            rc = SG_EINVAL;
        }
    } else {
        rc = fail(hf, SG_EINVAL, "%s: type \"%s\" is not supported", where, t);
    }
    node_free(&n);
    return rc;
}

static sg_tok_pre_t *new_pre(hf_t *hf, enum sg_tok_pre_type type, const char *where)
{
    if (hf->n_pres == SG_TOK_MAX_STAGES) {
        fail(hf, SG_EINVAL, "%s: more than %d pre-tokenizers", where, SG_TOK_MAX_STAGES);
        return NULL;
    }
    sg_tok_pre_t *p = &hf->pres[hf->n_pres++];
    memset(p, 0, sizeof *p);
    p->type = type;
    return p;
}

/* Append a Split on a regex (pattern) or a literal (str). */
static int add_split(hf_t *hf, const char *where, const char *pattern, const char *str, enum sg_tok_behavior behavior,
                     bool invert)
{
    sg_tok_pre_t *p = new_pre(hf, SG_PRE_SPLIT, where);
    if (!p)
        return SG_EINVAL;
    p->behavior = behavior;
    p->invert = invert;
    if (str)
        return dup_str(str, &p->str, &p->str_len);
    char msg[300];
    if (sg_tok_compile(pattern, PCRE2_ZERO_TERMINATED, &p->re, msg, sizeof msg) < 0)
        return fail(hf, SG_EINVAL, "%s.pattern: %s", where, msg);
    size_t jsz = 0;
    p->jit = pcre2_pattern_info(p->re, PCRE2_INFO_JITSIZE, &jsz) == 0 && jsz > 0;
    return 0;
}

static int behavior_of(hf_t *hf, const char *b, const char *where, enum sg_tok_behavior *out)
{
    static const struct {
        const char *name;
        enum sg_tok_behavior b;
    } names[] = {{"Removed", SG_SPLIT_REMOVED},
                 {"Isolated", SG_SPLIT_ISOLATED},
                 {"MergedWithPrevious", SG_SPLIT_MERGED_PREV},
                 {"MergedWithNext", SG_SPLIT_MERGED_NEXT},
                 {"Contiguous", SG_SPLIT_CONTIGUOUS}};
    for (size_t i = 0; i < SG_ARRAY_LEN(names); i++) {
        if (strcmp(b, names[i].name) == 0) {
            *out = names[i].b;
            return 0;
        }
    }
    return fail(hf, SG_EINVAL, "%s.behavior: \"%s\" is not supported", where, b);
}

/* Rust's char::is_whitespace; punctuation as HF's Punctuation and BertPreTokenizer see it (ASCII punctuation,
 * which holds some symbols, or a Unicode P* category). */
#define WS_CLASS "[\\t-\\r\\x{85}\\p{Z}]"
#define PUNCT_CLASS "[!-/:-@\\[-`{-~\\p{P}]"

static int walk_pretok(hf_t *hf, sg_js_t *js, const char *where)
{
    if (sg_js_peek(js) == 'n')
        return sg_js_skip(js) < 0 ? bad_json(hf, js, where) : 0;
    node_t n;
    int rc = read_node(hf, js, &n, where);
    char w[300];
    const char *t = rc < 0 ? "" : n.type;
    enum sg_tok_behavior beh = SG_SPLIT_ISOLATED;
    sg_tok_pre_t *p;
    if (rc == 0 && hf->bytelevel && strcmp(t, "Sequence") != 0)
        rc = fail(hf, SG_EINVAL, "%s: type \"%s\" after ByteLevel is not supported", where, t);
    if (rc < 0) {
    } else if (strcmp(t, "Sequence") == 0) {
        snprintf(w, sizeof w, "%s.pretokenizers", where);
        rc = n.list_at ? walk_list(hf, n.list_at, w, walk_pretok) : fail(hf, SG_EINVAL, "%s: missing", w);
    } else if (strcmp(t, "Split") == 0) {
        if (!n.regex && !n.string)
            rc = fail(hf, SG_EINVAL, "%s.pattern: missing", where);
        else if ((rc = behavior_of(hf, n.behavior ? n.behavior : "", where, &beh)) == 0)
            rc = add_split(hf, where, n.regex, n.regex ? NULL : n.string, beh, n.invert);
    } else if (strcmp(t, "ByteLevel") == 0) {
        if (n.add_prefix_space) {
            if (!(p = new_pre(hf, SG_PRE_BYTELEVEL, where)))
                rc = SG_EINVAL;
            else
                p->prefix_space = true;
        }
        if (rc == 0 && n.use_regex)
            rc = add_split(hf, where, GPT2_PAT, NULL, SG_SPLIT_ISOLATED, false);
        hf->bytelevel = true;
    } else if (strcmp(t, "Metaspace") == 0) {
        const char *scheme = n.prepend_scheme ? n.prepend_scheme : n.add_prefix_space ? "always" : "never";
        int prepend = strcmp(scheme, "always") == 0 ? 1 : strcmp(scheme, "first") == 0 ? 2 : 0;
        if (prepend == 0 && strcmp(scheme, "never") != 0)
            rc = fail(hf, SG_EINVAL, "%s.prepend_scheme: \"%s\" is not supported", where, scheme);
        else if (!(p = new_pre(hf, SG_PRE_METASPACE, where)))
            rc = SG_EINVAL;
        else if ((rc = dup_str(n.replacement ? n.replacement : META, &p->str, &p->str_len)) == 0) {
            p->prepend = prepend;
            p->split = n.split_set ? n.split : true;
        }
        hf->spm_space = true;
    } else if (strcmp(t, "Digits") == 0) {
        rc = add_split(hf, where, "\\p{N}", NULL, n.individual_digits ? SG_SPLIT_ISOLATED : SG_SPLIT_CONTIGUOUS, false);
    } else if (strcmp(t, "Punctuation") == 0) {
        if ((rc = behavior_of(hf, n.behavior ? n.behavior : "Isolated", where, &beh)) == 0)
            rc = add_split(hf, where, PUNCT_CLASS, NULL, beh, false);
    } else if (strcmp(t, "Whitespace") == 0) {
        rc = add_split(hf, where, "\\w+|[^\\w\\s]+", NULL, SG_SPLIT_REMOVED, true);
    } else if (strcmp(t, "WhitespaceSplit") == 0) {
        rc = add_split(hf, where, WS_CLASS "+", NULL, SG_SPLIT_REMOVED, false);
    } else if (strcmp(t, "CharDelimiterSplit") == 0) {
        if (!n.delimiter || !*n.delimiter)
            rc = fail(hf, SG_EINVAL, "%s.delimiter: missing", where);
        else
            rc = add_split(hf, where, NULL, n.delimiter, SG_SPLIT_REMOVED, false);
    } else if (strcmp(t, "BertPreTokenizer") == 0) {
        rc = add_split(hf, where, WS_CLASS "+", NULL, SG_SPLIT_REMOVED, false);
        if (rc == 0)
            rc = add_split(hf, where, PUNCT_CLASS, NULL, SG_SPLIT_ISOLATED, false);
    } else {
        rc = fail(hf, SG_EINVAL, "%s: type \"%s\" is not supported", where, t);
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
    char *type = NULL, *suffix = NULL;
    bool bpe_prefix = false;
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
        } else if (SG_JS_KEY(js, key, "unk_id") || SG_JS_KEY(js, key, "max_input_chars_per_word")) {
            bool unk = SG_JS_KEY(js, key, "unk_id");
            int64_t v = -1;
            bool is_int = false;
            if (sg_js_peek(js) == 'n')
                rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model") : 0;
            else if (sg_js_number(js, &v, &is_int) < 0 || !is_int || v < 0 || v >= SG_TOK_MAX_IDS)
                rc = fail(hf, SG_EINVAL, "model.%s: expected a number from 0 to %u",
                          unk ? "unk_id" : "max_input_chars_per_word", SG_TOK_MAX_IDS - 1);
            if (unk)
                hf->unk_id = v;
            else
                hf->wp_max_chars = v;
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
        } else if (SG_JS_KEY(js, key, "continuing_subword_prefix")) {
            free(hf->wp_prefix);
            hf->wp_prefix = NULL;
            rc = read_str(hf, js, &hf->wp_prefix, "model.continuing_subword_prefix");
            bpe_prefix = hf->wp_prefix && *hf->wp_prefix;
        } else if (SG_JS_KEY(js, key, "end_of_word_suffix")) {
            rc = read_str(hf, js, &suffix, "model.end_of_word_suffix");
        } else {
            rc = sg_js_skip(js) < 0 ? bad_json(hf, js, "model") : 0;
        }
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, js, "model");
    if (rc == 0) {
        const char *t = type ? type : "BPE";
        if (strcmp(t, "BPE") == 0)
            hf->model = SG_TOK_BPE;
        else if (strcmp(t, "Unigram") == 0)
            hf->model = SG_TOK_UNIGRAM;
        else if (strcmp(t, "WordPiece") == 0)
            hf->model = SG_TOK_WORDPIECE;
        else
            rc = fail(hf, SG_EINVAL, "model: type \"%s\" is not supported", t);
    }
    if (rc == 0 && hf->model == SG_TOK_BPE && bpe_prefix)
        rc = fail(hf, SG_EINVAL, "model.continuing_subword_prefix: \"%s\" is not supported", hf->wp_prefix);
    if (rc == 0 && hf->model == SG_TOK_BPE && suffix && *suffix)
        rc = fail(hf, SG_EINVAL, "model.end_of_word_suffix: \"%s\" is not supported", suffix);
    free(type);
    free(suffix);
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

/* WordPiece: a piece after the first ("##x") decodes to its text, a word's first piece to a space and its text
 * (decode drops the text's first space). */
static int set_wordpiece(hf_t *hf, uint32_t id, const char *k, size_t kl, char *tmp)
{
    sg_tokenizer_t *tok = hf->tok;
    size_t pl = tok->wp_prefix_len, n;
    if (kl >= pl && memcmp(k, tok->wp_prefix, pl) == 0 && pl > 0) {
        n = kl - pl;
        memcpy(tmp, k + pl, n);
    } else {
        tmp[0] = ' ';
        memcpy(tmp + 1, k, kl);
        n = kl + 1;
    }
    int rc = sg_tok_set_bytes(tok, id, tmp, n);
    return rc == 0 ? sg_tok_set_key(tok, id, k, kl) : rc;
}

/* Unigram: an array of [piece, score]; the id is the index. */
static int load_unigram_vocab(hf_t *hf)
{
    sg_tokenizer_t *tok = hf->tok;
    sg_js_t js;
    sg_js_init(&js, hf->vocab_at, (size_t)(hf->data + hf->len - hf->vocab_at));
    if (sg_js_arr_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "model.vocab: expected an array of [piece, score]");
    int count = 0, r, rc = 0;
    char tmp[TOKEN_MAX];
    size_t cap = 0;
    while (rc == 0 && (r = sg_js_arr_next(&js, &count)) == 1) {
        uint32_t id = (uint32_t)count - 1;
        int ac = 0, ar;
        double score = 0;
        if (id >= SG_TOK_MAX_IDS || sg_js_arr_begin(&js) < 0)
            return fail(hf, SG_EINVAL, "model.vocab[%u]: expected [piece, score]", id);
        while (rc == 0 && (ar = sg_js_arr_next(&js, &ac)) == 1) {
            sg_slice_t raw;
            const char *k;
            size_t kl;
            if (ac == 1) {
                if (sg_js_peek(&js) != '"' || sg_js_string(&js, &raw) < 0 || unescape(hf, raw, js.escaped, &k, &kl) < 0)
                    return fail(hf, SG_EINVAL, "model.vocab[%u]: expected [piece, score]", id);
                if (kl > TOKEN_MAX)
                    return fail(hf, SG_EINVAL, "model.vocab[%u]: piece longer than %d bytes", id, TOKEN_MAX);
                size_t n = spm_decode(k, kl, tmp);
                rc = sg_tok_set_bytes(tok, id, tmp, n);
                if (rc == 0)
                    rc = sg_tok_set_key(tok, id, k, kl);
            } else if (ac == 2) {
                if (sg_js_double(&js, &score) < 0)
                    return fail(hf, SG_EINVAL, "model.vocab[%u]: expected a score", id);
            } else {
                return fail(hf, SG_EINVAL, "model.vocab[%u]: expected [piece, score]", id);
            }
        }
        if (rc == 0 && (ar < 0 || ac != 2))
            return fail(hf, SG_EINVAL, "model.vocab[%u]: expected [piece, score]", id);
        if (rc == 0 && id >= cap) {
            size_t nc = cap ? cap * 2 : 4096;
            double *sc = realloc(tok->scores, nc * sizeof *sc);
            if (!sc)
                return SG_ENOMEM;
            tok->scores = sc;
            cap = nc;
        }
        if (rc == 0)
            tok->scores[id] = score;
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "model.vocab");
    return rc;
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
    char tmp[TOKEN_MAX + 8]; /* WordPiece puts a space in front */
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
        if (kl > TOKEN_MAX)
            return fail(hf, SG_EINVAL, "model.vocab[\"%.60s...\"]: token longer than %d bytes", k, TOKEN_MAX);
        if (hf->model == SG_TOK_WORDPIECE) {
            rc = set_wordpiece(hf, (uint32_t)id, k, kl, tmp);
        } else if (tok->kind == SG_TOK_BYTELEVEL) {
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

/*
 * Merges load in batches: a 262k vocabulary has half a million, and each needs three vocabulary lookups and a
 * pair-map insert, all at random places in tables far larger than the caches. Taking MBATCH merges at a time and
 * touching (prefetching) every table slot they will need before using any lets those memory reads overlap, which
 * halves Gemma 3's load time. Ranks, order and error messages are those of one merge at a time.
 */
#define MBATCH 64

typedef struct {
    uint32_t rank;
    uint32_t off, alen, blen; /* the two sides' keys, back to back in the batch text (so also the merged key) */
    bool bad;                 /* a side is not in the byte alphabet: an unknown token */
    uint64_t ha, hb, hm;
} merge_t;

typedef struct {
    merge_t m[MBATCH];
    size_t n;
    char *text;
    size_t len, cap;
} mbatch_t;

/* A side's key (byte-level files: the bytes its text stands for) appended to the batch text; false if none. */
static int batch_key(mbatch_t *mb, const sg_tokenizer_t *tok, const char *s, size_t len, uint32_t *klen, bool *bad)
{
    if (mb->len + len + 1 > mb->cap) {
        size_t cap = (mb->len + len + 1) * 2;
        char *t = realloc(mb->text, cap);
        if (!t)
            return SG_ENOMEM;
        mb->text = t;
        mb->cap = cap;
    }
    char *out = mb->text + mb->len;
    if (tok->kind == SG_TOK_BYTELEVEL) {
        ssize_t n = bytelevel_decode(s, len, out);
        if (n < 0) {
            *bad = true;
            memcpy(out, s, len);
            n = (ssize_t)len;
        }
        len = (size_t)n;
    } else {
        memcpy(out, s, len);
    }
    mb->len += len;
    *klen = (uint32_t)len;
    return 0;
}

static void prefetch_slot(const sg_tokenizer_t *tok, uint64_t h64)
{
    __builtin_prefetch(&tok->vmap[(uint32_t)h64 & tok->vmap_mask]);
}

/* The home slot's key bytes, when its hash is the one looked for (the usual case). */
static void prefetch_key(const sg_tokenizer_t *tok, uint64_t h64)
{
    const sg_tok_vslot_t *s = &tok->vmap[(uint32_t)h64 & tok->vmap_mask];
    if (s->hash == ((uint32_t)(h64 >> 32) | 1))
        __builtin_prefetch((tok->kblob ? tok->kblob : tok->blob) + s->koff);
}

static int flush_merges(hf_t *hf, mbatch_t *mb)
{
    sg_tokenizer_t *tok = hf->tok;
    uint32_t ids[MBATCH][3];
    for (size_t i = 0; i < mb->n; i++) {
        merge_t *m = &mb->m[i];
        const char *k = mb->text + m->off;
        m->ha = sg_tok_hash(k, m->alen);
        m->hb = sg_tok_hash(k + m->alen, m->blen);
        m->hm = sg_tok_hash(k, m->alen + m->blen);
        prefetch_slot(tok, m->ha);
        prefetch_slot(tok, m->hb);
        prefetch_slot(tok, m->hm);
    }
    for (size_t i = 0; i < mb->n; i++) {
        prefetch_key(tok, mb->m[i].ha);
        prefetch_key(tok, mb->m[i].hb);
        prefetch_key(tok, mb->m[i].hm);
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < mb->n; i++) {
        const merge_t *m = &mb->m[i];
        const char *k = mb->text + m->off;
        uint32_t ia = m->bad ? SG_TOK_NONE : sg_tok_lookup_hashed(tok, k, m->alen, m->ha);
        uint32_t ib = m->bad ? SG_TOK_NONE : sg_tok_lookup_hashed(tok, k + m->alen, m->blen, m->hb);
        if (ia == SG_TOK_NONE || ib == SG_TOK_NONE) {
            const char *u = ia == SG_TOK_NONE ? k : k + m->alen;
            int ul = (int)(ia == SG_TOK_NONE ? m->alen : m->blen);
            return fail(hf, SG_EINVAL, "model.merges[%u]: unknown token \"%.*s\"", m->rank, ul > 80 ? 80 : ul, u);
        }
        uint32_t im = sg_tok_lookup_hashed(tok, k, m->alen + m->blen, m->hm);
        if (im == SG_TOK_NONE)
            return fail(hf, SG_EINVAL, "model.merges[%u]: the merged token \"%.*s\" is not in model.vocab", m->rank,
                        (int)(m->alen + m->blen > 80 ? 80 : m->alen + m->blen), k);
        ids[i][0] = ia;
        ids[i][1] = ib;
        ids[i][2] = im;
        sg_tok_prefetch_pair(tok, ia, ib);
    }
    for (size_t i = 0; rc == 0 && i < mb->n; i++)
        rc = sg_tok_add_pair(tok, ids[i][0], ids[i][1], mb->m[i].rank, ids[i][2]);
    mb->n = 0;
    mb->len = 0;
    return rc;
}

static int add_merge(hf_t *hf, mbatch_t *mb, uint32_t rank, const char *a, size_t al, const char *b, size_t bl)
{
    merge_t *m = &mb->m[mb->n];
    *m = (merge_t){.rank = rank, .off = (uint32_t)mb->len};
    int rc = batch_key(mb, hf->tok, a, al, &m->alen, &m->bad);
    if (rc == 0)
        rc = batch_key(mb, hf->tok, b, bl, &m->blen, &m->bad);
    if (rc == 0 && ++mb->n == MBATCH)
        rc = flush_merges(hf, mb);
    return rc;
}

static int load_merges(hf_t *hf)
{
    sg_js_t js;
    sg_js_init(&js, hf->merges_at, (size_t)(hf->data + hf->len - hf->merges_at));
    if (sg_js_arr_begin(&js) < 0)
        return fail(hf, SG_EINVAL, "model.merges: expected an array");
    int count = 0, r, rc = 0;
    char first[TOKEN_MAX];
    mbatch_t mb = {.n = 0};
    while (rc == 0 && (r = sg_js_arr_next(&js, &count)) == 1) {
        uint32_t rank = (uint32_t)count - 1;
        int c = sg_js_peek(&js);
        sg_slice_t raw;
        const char *s;
        size_t n;
        if (c == '"') {
            if (sg_js_string(&js, &raw) < 0 || unescape(hf, raw, js.escaped, &s, &n) < 0) {
                free(mb.text);
                return bad_json(hf, &js, "model.merges");
            }
            const char *sp = memchr(s, ' ', n);
            if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s))) {
                free(mb.text);
                return fail(hf, SG_EINVAL, "model.merges[%u]: expected \"LEFT RIGHT\"", rank);
            }
            rc = add_merge(hf, &mb, rank, s, (size_t)(sp - s), sp + 1, n - (size_t)(sp + 1 - s));
        } else if (c == '[') {
            int ac = 0, ar;
            size_t fl = 0;
            sg_js_arr_begin(&js);
            while (rc == 0 && (ar = sg_js_arr_next(&js, &ac)) == 1) {
                if (ac > 2 || sg_js_peek(&js) != '"') {
                    free(mb.text);
                    return fail(hf, SG_EINVAL, "model.merges[%u]: expected [LEFT, RIGHT]", rank);
                }
                if (sg_js_string(&js, &raw) < 0 || unescape(hf, raw, js.escaped, &s, &n) < 0) {
                    free(mb.text);
                    return bad_json(hf, &js, "model.merges");
                }
                if (ac == 1) {
                    if (n > sizeof first) {
                        free(mb.text);
                        return fail(hf, SG_EINVAL, "model.merges[%u]: token too long", rank);
                    }
                    memcpy(first, s, n);
                    fl = n;
                } else {
                    rc = add_merge(hf, &mb, rank, first, fl, s, n);
                }
            }
            if (rc == 0 && ar < 0) {
                free(mb.text);
                return bad_json(hf, &js, "model.merges");
            }
            if (rc == 0 && ac != 2) {
                free(mb.text);
                return fail(hf, SG_EINVAL, "model.merges[%u]: expected [LEFT, RIGHT]", rank);
            }
        } else {
            {
                free(mb.text);
                return fail(hf, SG_EINVAL, "model.merges[%u]: expected \"LEFT RIGHT\" or [LEFT, RIGHT]", rank);
            }
        }
    }
    if (rc == 0 && r < 0)
        rc = bad_json(hf, &js, "model.merges");
    if (rc == 0)
        rc = flush_merges(hf, &mb);
    free(mb.text);
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
 * BPE over characters: the bytes X that end a character written right before "\u2581" inside some token. Where the
 * text has "\u2581" after a character whose last byte is not one of them (nor after another "\u2581"), no merge
 * can ever join the two (every merge makes a token), so the encoder may cut the text there and cache the pieces:
 * the ids stay exactly those of one BPE over the whole pre-token. Gemma 3's 262k tokens hold one such X (">").
 */
static void meta_keep(sg_tokenizer_t *tok, uint32_t n)
{
    for (uint32_t id = 0; id < n; id++) {
        if (!tok->has[id])
            continue;
        const char *k = tok->kblob + tok->koff[id];
        uint32_t kl = tok->klen[id];
        for (uint32_t i = 1; i + 3 <= kl; i++) {
            if (memcmp(k + i, META, 3) != 0)
                continue;
            if (i < 3 || memcmp(k + i - 3, META, 3) != 0) {
                unsigned char x = (unsigned char)k[i - 1];
                tok->spm_keep[x >> 3] |= (uint8_t)(1u << (x & 7));
            }
            i += 2;
        }
    }
}

static void hf_free_stages(hf_t *hf)
{
    for (uint32_t i = 0; i < hf->n_norms; i++)
        sg_tok_norm_free(&hf->norms[i]);
    for (uint32_t i = 0; i < hf->n_pres; i++)
        sg_tok_pre_free(&hf->pres[i]);
    hf->n_norms = hf->n_pres = 0;
}

/* The stages move from the walk into the model. */
static int take_stages(hf_t *hf)
{
    sg_tokenizer_t *tok = hf->tok;
    if (hf->n_norms) {
        if (!(tok->norms = malloc(hf->n_norms * sizeof *tok->norms)))
            return SG_ENOMEM;
        memcpy(tok->norms, hf->norms, hf->n_norms * sizeof *tok->norms);
        tok->n_norms = hf->n_norms;
        hf->n_norms = 0;
    }
    if (hf->n_pres) {
        if (!(tok->pres = calloc(SG_TOK_MAX_STAGES, sizeof *tok->pres)))
            return SG_ENOMEM;
        memcpy(tok->pres, hf->pres, hf->n_pres * sizeof *tok->pres);
        tok->n_pres = hf->n_pres;
        hf->n_pres = 0;
    }
    return 0;
}

int sg_tok_load_hf(const char *path, const char *data, size_t len, sg_tokenizer_t **out, char *err, size_t errlen)
{
    init_byte_map();
    hf_t hf = {.file = sg_tok_basename(path),
               .data = data,
               .len = len,
               .err = err,
               .errlen = errlen,
               .unk_id = -1,
               .wp_max_chars = -1};
    int rc = walk_top(&hf);
    if (rc == 0 && hf.bytelevel && hf.spm_space)
        rc = fail(&hf, SG_EINVAL, "pre_tokenizer: ByteLevel mixed with Metaspace is not supported");
    if (rc == 0 && hf.bytelevel && hf.model != SG_TOK_BPE)
        rc = fail(&hf, SG_EINVAL, "pre_tokenizer: ByteLevel is supported with a BPE model only");
    if (rc == 0) {
        hf.tok = sg_tok_new(hf.bytelevel ? SG_TOK_BYTELEVEL : SG_TOK_SPM);
        if (!hf.tok)
            rc = SG_ENOMEM;
    }
    sg_tokenizer_t *tok = hf.tok;
    if (rc == 0) {
        tok->model = hf.model;
        if (hf.model == SG_TOK_WORDPIECE) {
            const char *pre = hf.wp_prefix ? hf.wp_prefix : "##";
            tok->wp_prefix_len = strlen(pre);
            tok->wp_prefix = strdup(pre);
            tok->wp_max_chars = hf.wp_max_chars >= 0 ? (uint32_t)hf.wp_max_chars : 100;
            if (!tok->wp_prefix)
                rc = SG_ENOMEM;
        }
    }
    if (rc == 0)
        rc = hf.model == SG_TOK_UNIGRAM ? load_unigram_vocab(&hf) : load_vocab(&hf);
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
        if (hf.model == SG_TOK_UNIGRAM) {
            if (hf.unk_id >= 0 && (uint32_t)hf.unk_id >= n_vocab)
                rc = fail(&hf, SG_EINVAL, "model.unk_id: %lld is past the vocabulary", (long long)hf.unk_id);
            tok->unk_id = hf.unk_id >= 0 ? (uint32_t)hf.unk_id : SG_TOK_NONE;
            double min = 0;
            for (uint32_t i = 0; i < n_vocab; i++)
                if (i == 0 || tok->scores[i] < min)
                    min = tok->scores[i];
            tok->unk_score = min - 10.0;
        } else if (hf.unk_token) {
            tok->unk_id = sg_tok_lookup(tok, hf.unk_token, strlen(hf.unk_token));
            if (tok->unk_id == SG_TOK_NONE)
                rc = fail(&hf, SG_EINVAL, "model.unk_token: \"%s\" is not in model.vocab", hf.unk_token);
        }
        if (rc == 0 && hf.model == SG_TOK_WORDPIECE && tok->unk_id == SG_TOK_NONE)
            rc = fail(&hf, SG_EINVAL, "model.unk_token: missing (WordPiece needs one)");
        for (uint32_t i = 0; rc == 0 && i < n_vocab; i++)
            if (tok->has[i] && tok->klen[i] > tok->max_key_len)
                tok->max_key_len = tok->klen[i];
    }
    if (rc == 0 && tok->kind == SG_TOK_SPM && hf.model == SG_TOK_BPE) {
        meta_keep(tok, n_vocab);
        tok->spm_cut = sg_tok_lookup(tok, META, 3) != SG_TOK_NONE;
    }
    if (rc == 0)
        rc = sg_tok_pairs_init(tok, hf.model == SG_TOK_BPE && hf.merges_at ? n_vocab : 1024);
    if (rc == 0 && hf.merges_at && hf.model == SG_TOK_BPE)
        rc = load_merges(&hf);
    if (rc == 0 && hf.added_at)
        rc = load_added(&hf);
    if (rc == 0)
        rc = take_stages(&hf);
    if (rc == 0) {
        tok->direct = hf.ignore_merges && hf.model == SG_TOK_BPE;
        tok->byte_fallback = hf.byte_fallback;
        tok->fuse_unk = hf.fuse_unk;
        static const char *const names[] = {"BPE", "Unigram", "WordPiece"};
        size_t dl = strlen(path) + 64;
        tok->desc = malloc(dl);
        if (!tok->desc)
            rc = SG_ENOMEM;
        else
            snprintf(tok->desc, dl, "%s %s (tokenizer.json, %s)",
                     tok->kind == SG_TOK_BYTELEVEL ? "byte-level" : "SentencePiece-style", names[hf.model], path);
    }
    (void)dup; /* a byte-level text shared by two ids: the lower id encodes, both decode */
    if (rc == SG_ENOMEM)
        fail(&hf, rc, "out of memory");
    hf_free_stages(&hf);
    free(hf.unk_token);
    free(hf.wp_prefix);
    free(hf.buf);
    if (rc < 0) {
        sg_tok_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}
