/* Config files for `surge profile`: see sg_cfgfile.h and docs/config.md. */
#define _GNU_SOURCE
#include "sg_cfgfile.h"
#include "sg_config.h"
#include "sg_options.h"
#include "sg_opts.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <yaml.h>

#define MAX_FILE_BYTES (16u << 20) /* a config file is a page of flags; beyond this it is the wrong file */
#define WHERE_LEN 300

/* One key of the file, as the flags it stands for. */
typedef struct {
    const struct option *opt; /* the table entry the key names */
    int group;                /* the option it sets: its row in sg_opt_table, or X's for no-X */
    unsigned line;
    char where[WHERE_LEN]; /* "FILE:LINE" */
    char **words;          /* "--name=value" or "--name" */
    size_t n_words;
    const char *refuse; /* why the entry cannot be used unless the command line overrides it; NULL when it can */
} entry_t;

typedef struct {
    const char *path;
    entry_t *e;
    size_t n;
    unsigned problems;
    char sha256[65];
} file_t;

/* The words of the last expansion and where each came from (sg_cfgfile_where); main thread only, as the parse. */
static struct {
    const char *word;
    const char *where;
} * g_where;
static size_t g_n_where;
static entry_t *g_entries; /* owns the where strings above */
static size_t g_n_entries;

__attribute__((format(printf, 3, 4))) static void problem(file_t *f, unsigned line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* a key or value with a newline in it cannot split the line */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    if (line)
        fprintf(stderr, "surge: %s:%u: %s\n", f->path, line, msg);
    else
        fprintf(stderr, "surge: %s: %s\n", f->path, msg);
    f->problems++;
}

static const struct option *find_opt(const struct option *longs, const char *name)
{
    for (const struct option *o = longs; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

/*
 * The option a name sets, for overriding and for duplicates: its row (so --num-requests is --request-count, and
 * each of the media flags, which share one getopt value, is an option of its own); --no-progress sets what
 * --progress sets.
 */
static int group_of_row(const sg_opt_t *r)
{
    const sg_opt_t *pos = strncmp(r->name, "no-", 3) == 0 ? sg_opt_find(r->name + 3) : NULL;
    return (int)((pos ? pos : r) - sg_opt_table);
}

static int group_of(const struct option *o)
{
    const sg_opt_t *r = sg_opt_find(o->name);
    return r ? group_of_row(r) : -1 - o->val;
}

/* --help, --version and --config are the command line's only (engine/options.c) */
static bool not_a_key(const struct option *o)
{
    const sg_opt_t *r = sg_opt_find(o->name);
    return !r || (r->flags & SG_OPT_NOT_A_KEY);
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The key the user may have meant: the nearest name within a few edits, else one that shares its beginning. */
static const char *suggest(const struct option *longs, const char *name)
{
    const char *best = NULL;
    size_t best_d = strlen(name) / 4 + 1;
    if (best_d > 3)
        best_d = 3;
    for (const struct option *o = longs; o->name; o++) {
        if (not_a_key(o))
            continue;
        size_t d = edit_distance(name, o->name);
        if (d <= best_d && (!best || d < best_d)) {
            best = o->name;
            best_d = d;
        }
    }
    if (best)
        return best;
    const char *out[1];
    return sg_opts_suggest(name, longs, out, 1) ? out[0] : NULL;
}

static bool is_null_scalar(const yaml_node_t *v)
{
    if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *t = (const char *)v->data.scalar.value;
    return !*t || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 || strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

/* YAML's true and false (the 1.2 core schema's spellings); -1 for anything else */
static int yaml_bool(const char *t)
{
    if (strcmp(t, "true") == 0 || strcmp(t, "True") == 0 || strcmp(t, "TRUE") == 0)
        return 1;
    if (strcmp(t, "false") == 0 || strcmp(t, "False") == 0 || strcmp(t, "FALSE") == 0)
        return 0;
    return -1;
}

static int push_word(entry_t *e, const char *name, const char *value)
{
    char **w = realloc(e->words, (e->n_words + 1) * sizeof *w);
    if (!w)
        return SG_ENOMEM;
    e->words = w;
    if (value ? asprintf(&w[e->n_words], "--%s=%s", name, value) < 0 : asprintf(&w[e->n_words], "--%s", name) < 0)
        return SG_ENOMEM;
    e->n_words++;
    return 0;
}

static void entries_free(entry_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < e[i].n_words; j++)
            free(e[i].words[j]);
        free(e[i].words);
    }
    free(e);
}

/* A scalar's text, refused when it holds a NUL (a "\0" escape): flags are C strings. */
static const char *scalar_text(file_t *f, const yaml_node_t *v, const char *key)
{
    const char *t = (const char *)v->data.scalar.value;
    if (strlen(t) != v->data.scalar.length) {
        problem(f, (unsigned)v->start_mark.line + 1, "%s: a value must not contain a NUL character", key);
        return NULL;
    }
    return t;
}

/* The value v of option o (named raw in messages, its key on line) as a new entry of f, or a problem. */
static int take_value(file_t *f, yaml_document_t *doc, const char *raw, unsigned line, const struct option *o,
                      yaml_node_t *v, const struct option *longs)
{
    int group = group_of(o);
    for (size_t i = 0; i < f->n; i++)
        if (f->e[i].group == group) {
            problem(f, line, "%s: the same option as %s on line %u; give it once", raw, f->e[i].opt->name,
                    f->e[i].line);
            return 0;
        }
    entry_t e = {.opt = o, .group = group, .line = line};
    snprintf(e.where, sizeof e.where, "%s:%u", f->path, line);
    int rc = 0;
    if (v->type == YAML_MAPPING_NODE) {
        /* GenAI-Perf writes goodput and extra inputs as mappings: each NAME: VALUE is one NAME:VALUE */
        if (!sg_config_option_repeatable(o->val) || strcmp(o->name, "model") == 0 || strcmp(o->name, "slo") == 0) {
            problem(f, line,
                    "%s: a section; keys are surge profile's flag names (docs/config.md), or GenAI-Perf's "
                    "sections (endpoint, perf_analyzer, input, output, tokenizer)",
                    raw);
            return 0;
        }
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top && rc == 0; p++) {
            yaml_node_t *pk = yaml_document_get_node(doc, p->key), *pv = yaml_document_get_node(doc, p->value);
            const char *kt = pk->type == YAML_SCALAR_NODE ? scalar_text(f, pk, raw) : NULL;
            const char *vt = pv->type == YAML_SCALAR_NODE && !is_null_scalar(pv) ? scalar_text(f, pv, raw) : NULL;
            if (!kt || !vt) {
                problem(f, (unsigned)pk->start_mark.line + 1, "%s: each entry must be NAME: VALUE", raw);
                break;
            }
            char *pair_text;
            if (asprintf(&pair_text, "%s:%s", kt, vt) < 0) {
                rc = SG_ENOMEM;
                break;
            }
            rc = push_word(&e, o->name, pair_text);
            free(pair_text);
        }
    } else if (o->has_arg == no_argument) {
        const char *t = v->type == YAML_SCALAR_NODE ? scalar_text(f, v, raw) : NULL;
        int b = t ? yaml_bool(t) : -1;
        if (b < 0) {
            if (!t && v->type == YAML_SCALAR_NODE)
                return 0;
            problem(f, line, "%s: a flag without a value: expected true or false", raw);
            return 0;
        }
        if (b) {
            rc = push_word(&e, o->name, NULL);
        } else {
            /* false: the opposite flag where there is one (progress: false is --no-progress), else the default */
            const struct option *neg = NULL;
            char negname[140];
            if (strncmp(o->name, "no-", 3) == 0)
                neg = find_opt(longs, o->name + 3);
            else if (snprintf(negname, sizeof negname, "no-%s", o->name) < (int)sizeof negname)
                neg = find_opt(longs, negname);
            if (neg)
                rc = push_word(&e, neg->name, NULL);
        }
    } else if (v->type == YAML_SCALAR_NODE) {
        if (is_null_scalar(v)) {
            problem(f, line, "%s: has no value", raw);
            return 0;
        }
        const char *t = scalar_text(f, v, raw);
        if (!t)
            return 0;
        rc = push_word(&e, o->name, t);
    } else { /* a sequence */
        yaml_node_item_t *it = v->data.sequence.items.start, *end = v->data.sequence.items.top;
        if (it == end && !sg_config_option_repeatable(o->val)) {
            problem(f, line, "%s: an empty list", raw);
            return 0;
        }
        size_t len = 0;
        for (yaml_node_item_t *p = it; p < end; p++) {
            yaml_node_t *item = yaml_document_get_node(doc, *p);
            if (item->type != YAML_SCALAR_NODE || is_null_scalar(item)) {
                problem(f, (unsigned)item->start_mark.line + 1, "%s: each item of the list must be a value", raw);
                return 0;
            }
            if (!scalar_text(f, item, raw))
                return 0;
            len += item->data.scalar.length + 1;
        }
        if (sg_config_option_repeatable(o->val)) { /* -H a -H b */
            for (yaml_node_item_t *p = it; p < end && rc == 0; p++)
                rc = push_word(&e, o->name, (const char *)yaml_document_get_node(doc, *p)->data.scalar.value);
        } else { /* --concurrency 1,2,4 */
            char *joined = malloc(len + 1);
            if (!joined)
                return SG_ENOMEM;
            joined[0] = '\0';
            for (yaml_node_item_t *p = it; p < end; p++) {
                if (p > it)
                    strcat(joined, ",");
                strcat(joined, (const char *)yaml_document_get_node(doc, *p)->data.scalar.value);
            }
            rc = push_word(&e, o->name, joined);
            free(joined);
        }
    }
    entry_t *grown = rc == 0 ? realloc(f->e, (f->n + 1) * sizeof *grown) : NULL;
    if (!grown) {
        for (size_t j = 0; j < e.n_words; j++)
            free(e.words[j]);
        free(e.words);
        return SG_ENOMEM;
    }
    f->e = grown;
    f->e[f->n++] = e;
    return 0;
}

/* GenAI-Perf's config file (genai-perf config -f): its sections' keys, as paths, and the flag each one is. A flag
 * this build lacks is named in the problem; "" is a key surge has no counterpart for. */
static const struct {
    const char *path, *flag, *why;
} genai_keys[] = {
    {"endpoint.model_selection_strategy", "model-selection-strategy", NULL},
    {"endpoint.backend", "backend", NULL},
    {"endpoint.custom", "endpoint", NULL},
    {"endpoint.type", "endpoint-type", NULL},
    {"endpoint.service_kind", "service-kind", NULL},
    {"endpoint.streaming", "streaming", NULL},
    {"endpoint.server_metrics_url", "server-metrics-url", NULL},
    {"endpoint.server_metrics_urls", "server-metrics-url", NULL},
    {"endpoint.url", "url", NULL},
    {"perf_analyzer.stimulus.concurrency", "concurrency", NULL},
    {"perf_analyzer.stimulus.request_rate", "request-rate", NULL},
    {"perf_analyzer.stability_percentage", "stability-percentage", NULL},
    {"perf_analyzer.measurement_interval", "measurement-interval", NULL},
    {"perf_analyzer.warmup_request_count", "warmup-request-count", NULL},
    {"perf_analyzer.verbose", "verbose", NULL},
    {"perf_analyzer.path", "", "surge has no perf_analyzer behind it"},
    {"input.batch_size", "batch-size", NULL},
    {"input.extra", "extra-inputs", NULL},
    {"input.goodput", "goodput", NULL},
    {"input.header", "header", NULL},
    {"input.file", "input-file", NULL},
    {"input.num_dataset_entries", "num-prompts", NULL},
    {"input.random_seed", "random-seed", NULL},
    {"input.output_tokens.mean", "output-tokens-mean", NULL},
    {"input.output_tokens.stddev", "output-tokens-stddev", NULL},
    {"input.output_tokens.deterministic", "output-tokens-mean-deterministic", NULL},
    {"input.synthetic_tokens.mean", "synthetic-input-tokens-mean", NULL},
    {"input.synthetic_tokens.stddev", "synthetic-input-tokens-stddev", NULL},
    {"input.prefix_prompt.num", "num-prefix-prompts", NULL},
    {"input.prefix_prompt.length", "prefix-prompt-length", NULL},
    {"input.request_count.warmup", "warmup-request-count", NULL},
    {"input.sessions.num", "conversation-num", NULL},
    {"input.sessions.turns.mean", "conversation-turn-mean", NULL},
    {"input.sessions.turns.stddev", "conversation-turn-stddev", NULL},
    {"input.sessions.turn_delay.mean", "conversation-turn-delay-mean", NULL},
    {"input.sessions.turn_delay.stddev", "conversation-turn-delay-stddev", NULL},
    {"input.image.batch_size", "image-batch-size", NULL},
    {"input.image.width_mean", "image-width-mean", NULL},
    {"input.image.width_stddev", "image-width-stddev", NULL},
    {"input.image.height_mean", "image-height-mean", NULL},
    {"input.image.height_stddev", "image-height-stddev", NULL},
    {"input.image.format", "image-format", NULL},
    {"output.artifact_directory", "artifact-dir", NULL},
    {"output.profile_export_file", "profile-export-file", NULL},
    {"output.generate_plots", "generate-plots", NULL},
    {"output.checkpoint_directory", "", "surge keeps no checkpoints"},
    {"output.enable_checkpointing", "", "surge keeps no checkpoints"},
    {"tokenizer.name", "tokenizer", NULL},
    {"tokenizer.revision", "", "surge reads a local tokenizer or the Hugging Face cache: give the revision's files"},
    {"tokenizer.trust_remote_code", "", "surge runs no tokenizer code"},
};

static bool genai_section(const char *key)
{
    static const char *const sections[] = {"endpoint", "perf_analyzer", "input", "output", "tokenizer", "analyze"};
    for (size_t i = 0; i < SG_ARRAY_LEN(sections); i++)
        if (strcmp(key, sections[i]) == 0)
            return true;
    return false;
}

/* One key of a GenAI-Perf section at path (its scalar key on line, value v): a flag's entry, a deeper section, or a
 * problem. */
static int take_genai(file_t *f, yaml_document_t *doc, const char *path, unsigned line, yaml_node_t *v,
                      const struct option *longs)
{
    if (strcmp(path, "analyze") == 0) {
        problem(f, line,
                "analyze: GenAI-Perf's sweeps are lists here: concurrency: [1, 2, 4], request-rate: [...], or "
                "concurrency-range: START:END:STEP (docs/capacity.md)");
        return 0;
    }
    if (strcmp(path, "perf_analyzer.measurement") == 0 && v->type == YAML_MAPPING_NODE) {
        /* {mode: request_count|interval, num: N}: N requests (the default mode), or an interval in ms */
        yaml_node_t *mode = NULL, *num = NULL;
        unsigned num_line = line;
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            const char *kt = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
            if (strcmp(kt, "mode") == 0) {
                mode = yaml_document_get_node(doc, p->value);
            } else if (strcmp(kt, "num") == 0) {
                num = yaml_document_get_node(doc, p->value);
                num_line = (unsigned)k->start_mark.line + 1;
            } else {
                problem(f, (unsigned)k->start_mark.line + 1, "GenAI-Perf's %s.%s: not one of its keys (mode, num)",
                        path, kt);
                return 0;
            }
        }
        const char *m =
            mode && mode->type == YAML_SCALAR_NODE ? (const char *)mode->data.scalar.value : "request_count";
        bool interval = strcasecmp(m, "interval") == 0;
        if (!interval && strcasecmp(m, "request_count") != 0) {
            problem(f, line, "GenAI-Perf's %s.mode: expected request_count or interval, got \"%s\"", path, m);
            return 0;
        }
        if (!num)
            return 0; /* GenAI-Perf's default count: surge's own default applies */
        const char *flag = interval ? "measurement-interval" : "request-count";
        char shown[160];
        snprintf(shown, sizeof shown, "%s.num (--%s)", path, flag);
        return take_value(f, doc, shown, num_line, find_opt(longs, flag), num, longs);
    }
    if (v->type == YAML_MAPPING_NODE && strcmp(path, "input.goodput") != 0 && strcmp(path, "input.extra") != 0) {
        int rc = 0;
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top && rc == 0; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            unsigned kl = (unsigned)k->start_mark.line + 1;
            if (k->type != YAML_SCALAR_NODE || strlen((const char *)k->data.scalar.value) > 60) {
                problem(f, kl, "%s: a key must be a name", path);
                continue;
            }
            char sub[200];
            snprintf(sub, sizeof sub, "%s.%s", path, (const char *)k->data.scalar.value);
            rc = take_genai(f, doc, sub, kl, yaml_document_get_node(doc, p->value), longs);
        }
        return rc;
    }
    for (size_t i = 0; i < SG_ARRAY_LEN(genai_keys); i++) {
        if (strcmp(genai_keys[i].path, path) != 0)
            continue;
        if (genai_keys[i].why) {
            /* off is what surge does anyway: enable_checkpointing: false, trust_remote_code: false */
            if (v->type == YAML_SCALAR_NODE && yaml_bool((const char *)v->data.scalar.value) == 0)
                return 0;
            problem(f, line, "GenAI-Perf's %s has no counterpart here: %s", path, genai_keys[i].why);
            return 0;
        }
        const struct option *o = find_opt(longs, genai_keys[i].flag);
        if (!o) {
            problem(f, line, "GenAI-Perf's %s (--%s) is not a flag of this surge", path, genai_keys[i].flag);
            return 0;
        }
        char shown[200];
        snprintf(shown, sizeof shown, "%s (--%s)", path, o->name);
        return take_value(f, doc, shown, line, o, v, longs);
    }
    problem(f, line, "GenAI-Perf's %s: not a key surge knows (docs/config.md lists the ones it reads)", path);
    return 0;
}

/* One key: its flags into a new entry of f, or a problem. Returns SG_ENOMEM only; problems are counted in f. */
static int take_key(file_t *f, yaml_document_t *doc, const yaml_node_pair_t *pair, const struct option *longs)
{
    yaml_node_t *k = yaml_document_get_node(doc, pair->key);
    yaml_node_t *v = yaml_document_get_node(doc, pair->value);
    unsigned line = (unsigned)k->start_mark.line + 1;
    if (k->type != YAML_SCALAR_NODE) {
        problem(f, line, "a key must be a flag's name, not a list or a mapping");
        return 0;
    }
    char name[128];
    const char *raw = (const char *)k->data.scalar.value;
    if (raw[0] == '-') {
        problem(f, line, "%s: write a key without its leading dashes (%s: VALUE)", raw, raw + strspn(raw, "-"));
        return 0;
    }
    if (strlen(raw) >= sizeof name || strlen(raw) != k->data.scalar.length) {
        problem(f, line, "unknown key \"%.60s...\"", raw);
        return 0;
    }
    if (strcmp(raw, "schemaVersion") == 0 || (strcmp(raw, "benchmark") == 0 && v->type == YAML_MAPPING_NODE)) {
        problem(f, line, "%s: AIPerf's YAML layout is not read: write surge profile's flags as keys (docs/config.md)",
                raw);
        return 0;
    }
    /* GenAI-Perf's sections hold mappings; surge's own keys never do (endpoint: PATH, tokenizer: NAME are ours) */
    if (v->type == YAML_MAPPING_NODE && genai_section(raw))
        return take_genai(f, doc, raw, line, v, longs);
    /* keys take dashes or underscores: request_rate is request-rate */
    for (size_t i = 0;; i++) {
        name[i] = raw[i] == '_' ? '-' : raw[i];
        if (!raw[i])
            break;
    }
    /* GenAI-Perf's top-level model_name(s) */
    if (strcmp(name, "model-name") == 0 || strcmp(name, "model-names") == 0)
        strcpy(name, "model");
    const struct option *o = find_opt(longs, name);
    if (o && not_a_key(o)) {
        problem(f, line, "%s: not a config key (%s)", raw,
                strcmp(name, "config") == 0 ? "a config file cannot name another" : "a command-line action");
        return 0;
    }
    if (!o) {
        const char *s = suggest(longs, name);
        if (s)
            problem(f, line, "unknown key %s (did you mean %s?)", raw, s);
        else
            problem(f, line, "unknown key %s (the keys are surge profile's long flags: surge config keys)", raw);
        return 0;
    }
    return take_value(f, doc, raw, line, o, v, longs);
}

static void hex(const unsigned char *h, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static int read_file(file_t *f, unsigned char **data, size_t *len)
{
    FILE *fp = fopen(f->path, "rb");
    if (!fp) {
        problem(f, 0, "cannot read the config file: %s", strerror(errno));
        return SG_EINVAL;
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            unsigned char *g = cap < MAX_FILE_BYTES ? realloc(buf, cap * 2) : NULL;
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, fp);
        n += r;
        if (r == 0)
            break;
    }
    bool err = ferror(fp);
    fclose(fp);
    if (!buf || err) {
        free(buf);
        problem(f, 0, err ? "cannot read the config file" : "larger than %u MiB: not a config file",
                MAX_FILE_BYTES >> 20);
        return SG_EINVAL;
    }
    *data = buf;
    *len = n;
    return 0;
}

/* ---------- an expanded configuration read back (surge config expand's JSON, a run's input_config) ---------- */

/* A value of the echo as the text of a flag's value: numbers exact (%.17g), a list joined with commas. NULL for
 * anything else (an object, a null). malloc'd. */
static char *echo_text(const json_t *v)
{
    char *t = NULL;
    if (json_is_string(v))
        t = strdup(json_string_value(v));
    else if (json_is_integer(v) && asprintf(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0)
        t = NULL;
    else if (json_is_real(v) && asprintf(&t, "%.17g", json_real_value(v)) < 0)
        t = NULL;
    else if (json_is_boolean(v))
        t = strdup(json_is_true(v) ? "true" : "false");
    else if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            char *it = json_is_array(item) ? NULL : echo_text(item), *joined = NULL;
            if (!it || asprintf(&joined, "%s%s%s", t ? t : "", t ? "," : "", it) < 0) {
                free(it);
                free(t);
                return NULL;
            }
            free(it);
            free(t);
            t = joined;
        }
        if (!t)
            t = strdup("");
    }
    return t;
}

/* Flag `flag` (a long name) with the echo's value v, as the entry of key in f. Lists give a repeatable flag once per
 * item; true gives a flag without a value, false its no- form (or nothing); objects give NAME:VALUE per member
 * (--goodput) or, for --extra-inputs, the object itself. */
static int echo_flag(file_t *f, const char *key, const char *flag, const json_t *v, const struct option *longs)
{
    const struct option *o = find_opt(longs, flag);
    if (!o || not_a_key(o)) {
        problem(f, 0, "%s: not a key of an expanded configuration", key);
        return 0;
    }
    entry_t e = {.opt = o, .group = group_of(o)};
    for (size_t i = 0; i < f->n; i++)
        if (f->e[i].group == e.group) {
            problem(f, 0, "%s: the same option as %s, given before; give it once", key, f->e[i].opt->name);
            return 0;
        }
    snprintf(e.where, sizeof e.where, "%s: %s", f->path, key);
    int rc = 0;
    bool repeat = sg_config_option_repeatable(o->val);
    if (json_is_object(v) && strcmp(o->name, "extra-inputs") == 0) {
        char *t = json_dumps(v, JSON_COMPACT);
        rc = t ? push_word(&e, o->name, t) : SG_ENOMEM;
        free(t);
    } else if (json_is_object(v) && repeat) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)v, k, m)
        {
            char *t = echo_text(m), *pair = NULL;
            rc = t && asprintf(&pair, "%s:%s", k, t) >= 0 ? push_word(&e, o->name, pair) : SG_ENOMEM;
            free(t);
            free(pair);
            if (rc)
                break;
        }
    } else if (json_is_array(v) && repeat) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            char *t = echo_text(item);
            rc = t ? push_word(&e, o->name, t) : SG_ENOMEM;
            free(t);
            if (rc)
                break;
        }
    } else if (json_is_boolean(v) && o->has_arg == no_argument) {
        char neg[140];
        snprintf(neg, sizeof neg, "no-%s", o->name);
        const struct option *n = json_is_true(v) ? o : find_opt(longs, neg);
        rc = n ? push_word(&e, n->name, NULL) : 0;
    } else if (json_is_true(v) && o->has_arg == optional_argument) {
        rc = push_word(&e, o->name, NULL);
    } else {
        char *t = echo_text(v);
        if (!t) {
            problem(f, 0, "%s: a value --%s cannot take", key, o->name);
            return 0;
        }
        rc = push_word(&e, o->name, t);
        free(t);
    }
    entry_t *grown = rc == 0 ? realloc(f->e, (f->n + 1) * sizeof *grown) : NULL;
    if (!grown) {
        for (size_t j = 0; j < e.n_words; j++)
            free(e.words[j]);
        free(e.words);
        return rc ? rc : SG_ENOMEM;
    }
    f->e = grown;
    f->e[f->n++] = e;
    return 0;
}

/* Whether a list of headers holds one the echo redacted (its value is not in the file). */
static bool redacted(const json_t *headers)
{
    size_t i;
    json_t *h;
    json_array_foreach(headers, i, h)
    {
        const char *t = json_string_value(h);
        if (t && strstr(t, ": <redacted>"))
            return true;
    }
    return false;
}

/*
 * The echo's structures (engine/config.c's hooks) and the flags of their members: "" for a member the echo derives
 * or repeats from elsewhere. A member not listed is the flag of its own name.
 */
static const struct {
    const char *group, *member, *flag;
} echo_members[] = {
    {"stability", "measurement_interval_ms", "measurement-interval"},
    {"sweep", "kind", ""}, /* with values: --concurrency or --request-rate V1,V2,... */
    {"sweep", "values", ""},
    {"sweep", "cooldown_seconds", "parameter-sweep-cooldown-seconds"},
    {"search", "kind", "search"},
    {"search", "range_lo", ""}, /* with range_hi: --search-range LO:HI */
    {"search", "range_hi", ""},
    {"search", "precision", "search-precision"},
    {"search", "trials", "search-trials"},
    {"search", "max_trials", "search-max-trials"},
    {"search", "cooldown_seconds", "parameter-sweep-cooldown-seconds"},
    {"multi_run", "confidence_level", ""}, /* the top level's */
    {"multi_run", "cooldown_seconds", "profile-run-cooldown-seconds"},
    {"multi_run", "warmup_only_first_run", "profile-run-disable-warmup-after-first"},
    {"media", "audio_sample_rates_hz", "audio-sample-rates"},
};

/* The flag a key (or a member's) of the echo names: its dashes for underscores. */
static void flag_of(char *out, size_t cap, const char *key)
{
    size_t i = 0;
    for (; key[i] && i + 1 < cap; i++)
        out[i] = key[i] == '_' ? '-' : key[i];
    out[i] = '\0';
}

static int echo_group(file_t *f, const char *key, const json_t *g, const struct option *longs)
{
    int rc = 0;
    const char *m;
    json_t *v;
    json_object_foreach((json_t *)g, m, v)
    {
        char flag[128], shown[200];
        flag_of(flag, sizeof flag, m);
        for (size_t i = 0; i < SG_ARRAY_LEN(echo_members); i++)
            if (strcmp(echo_members[i].group, key) == 0 && strcmp(echo_members[i].member, m) == 0)
                snprintf(flag, sizeof flag, "%s", echo_members[i].flag);
        snprintf(shown, sizeof shown, "%s.%s", key, m);
        if (flag[0] && !json_is_null(v) && (rc = echo_flag(f, shown, flag, v, longs)) != 0)
            return rc;
    }
    if (strcmp(key, "sweep") == 0) {
        const char *kind = json_string_value(json_object_get(g, "kind"));
        char flag[64];
        flag_of(flag, sizeof flag, kind ? kind : "");
        rc = echo_flag(f, "sweep.values", flag, json_object_get(g, "values"), longs);
    } else if (strcmp(key, "search") == 0) {
        const json_t *lo = json_object_get(g, "range_lo"), *hi = json_object_get(g, "range_hi");
        char *tl = echo_text(lo), *th = json_is_null(hi) ? strdup("") : echo_text(hi), *range = NULL;
        if (tl && th && asprintf(&range, "%s:%s", tl, th) >= 0) {
            json_t *r = json_string(range);
            rc = r ? echo_flag(f, "search.range_lo", "search-range", r, longs) : SG_ENOMEM;
            json_decref(r);
        }
        free(tl);
        free(th);
        free(range);
    }
    return rc;
}

/*
 * An expanded configuration: the JSON surge config expand prints (a run's input_config, as sg_config_to_json
 * writes it), read back as the flags that make it again. A null, or a value the defaults' echo has, is not a flag
 * given (so that the rules between options see what the run was given, not every default); the keys the echo derives
 * (derived: the file's name and hash; the first point's load beside a sweep or a search, which set it; the
 * duration the stability windows set; url beside urls) say nothing; a structure's members are their flags
 * (echo_members).
 */
static int take_echo(file_t *f, const json_t *root, const struct option *longs)
{
    /* keys the echo derives: always, or when the key `by` is set (present, not null, not false) */
    static const struct {
        const char *key, *by;
    } derived[] = {
        {"config_file", NULL},
        {"config_file_sha256", NULL},
        {"isl_estimate", NULL},
        {"request_rate", "sweep"},
        {"concurrency", "sweep"},
        {"request_rate", "search"},
        {"concurrency", "search"},
        {"benchmark_duration", "stability"},
        {"request_count", "fixed_schedule"},
        {"url", "urls"},
        {"server_metrics_url", "gpu_telemetry"},
    };
    json_t *def = sg_config_default_echo();
    if (!def)
        return SG_ENOMEM;
    /* --gpu-telemetry's exporters are in server_metrics_url with the others: each given as --gpu-telemetry URL */
    json_t *scrape = json_object_get(root, "server_metrics_url");
    const char *url = json_string_value(json_object_get(root, "url"));
    int rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        bool skip = json_is_null(v) || json_equal(v, json_object_get(def, key));
        for (size_t i = 0; i < SG_ARRAY_LEN(derived); i++) {
            const json_t *by = derived[i].by ? json_object_get(root, derived[i].by) : NULL;
            skip = skip || (strcmp(key, derived[i].key) == 0 &&
                            (!derived[i].by || (by && !json_is_null(by) && !json_is_false(by))));
        }
        /* the service kind says it: --endpoint-type kserve is --service-kind triton */
        skip = skip ||
               (strcmp(key, "endpoint_type") == 0 && json_is_string(v) && strcmp(json_string_value(v), "kserve") == 0);
        if (skip)
            continue;
        char flag[128];
        flag_of(flag, sizeof flag, key);
        if (strcmp(key, "gpu_telemetry") == 0 && json_array_size(scrape) > 0) {
            rc = echo_flag(f, key, "gpu-telemetry", scrape, longs);
        } else if (json_is_object(v) && strcmp(key, "extra_inputs") != 0 && strcmp(key, "goodput") != 0) {
            rc = echo_group(f, key, v, longs);
        } else if (strcmp(key, "endpoint") == 0 && json_is_string(v)) {
            /* the echo's path has the URL's base path in front: --endpoint is what follows it */
            const char *path = json_string_value(v), *host = url ? strstr(url, "://") : NULL;
            const char *base = url ? strchr(host ? host + 3 : url, '/') : NULL;
            size_t bl = base ? strlen(base) : 0;
            while (bl && base[bl - 1] == '/')
                bl--;
            json_t *rest = json_string(bl && strncmp(path, base, bl) == 0 ? path + bl : path);
            rc = rest ? echo_flag(f, key, "endpoint", rest, longs) : SG_ENOMEM;
            json_decref(rest);
        } else {
            size_t before = f->n;
            rc = echo_flag(f, key,
                           strcmp(key, "headers") == 0 ? "header"
                           : strcmp(key, "urls") == 0  ? "url"
                                                       : flag,
                           v, longs);
            if (rc == 0 && f->n > before && strcmp(key, "headers") == 0 && redacted(v))
                f->e[before].refuse = "a credential's value is <redacted> in the echo: give the headers with -H on "
                                      "the command line (which replaces the file's list)";
        }
        if (rc)
            break;
    }
    json_decref(def);
    return rc;
}

static int check_words(file_t *f);

/* Reads and checks the file: its entries into f; every problem reported. 0, SG_EINVAL or SG_ENOMEM. */
static int load(file_t *f, const struct option *longs)
{
    unsigned char *data;
    size_t len;
    int rc = read_file(f, &data, &len);
    if (rc)
        return rc;
    unsigned char h[32];
    if (wc_Sha256Hash(data, (word32)len, h) != 0) {
        free(data);
        problem(f, 0, "cannot hash the file");
        return SG_EINVAL;
    }
    hex(h, sizeof h, f->sha256);
    /* an expanded configuration: JSON with config_file_sha256, which only the echo has (no flag's key) */
    json_t *echo = json_loadb((const char *)data, len, 0, NULL);
    if (json_is_object(echo) && json_object_get(echo, "config_file_sha256")) {
        rc = take_echo(f, echo, longs);
        json_decref(echo);
        free(data);
        return rc ? rc : check_words(f);
    }
    json_decref(echo);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(data);
        return SG_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, data, len);
    if (!yaml_parser_load(&parser, &doc)) {
        problem(f, (unsigned)parser.problem_mark.line + 1, "YAML: %s%s%s (column %u)",
                parser.problem ? parser.problem : "malformed", parser.context ? " " : "",
                parser.context ? parser.context : "", (unsigned)parser.problem_mark.column + 1);
        yaml_parser_delete(&parser);
        free(data);
        return SG_EINVAL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        problem(f, 0, "holds no keys");
    } else if (root->type != YAML_MAPPING_NODE) {
        problem(f, (unsigned)root->start_mark.line + 1, "expected a mapping of flag names to values (isl: 128)");
    } else {
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top && rc == 0; p++)
            rc = take_key(f, &doc, p, longs);
        /* a second document ("---") would be read by no one */
        yaml_document_t next;
        if (rc == 0 && yaml_parser_load(&parser, &next)) {
            yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2)
                problem(f, (unsigned)r2->start_mark.line + 1, "a second YAML document: give one per file");
            yaml_document_delete(&next);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(data);
    return rc ? rc : check_words(f);
}

/* Each value as its flag takes it, so that every bad one is named with its line, not only the first. */
static int check_words(file_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < f->e[i].n_words; j++) {
            const char *w = f->e[i].words[j] + 2;
            const char *eq = strchr(w, '=');
            char name[128];
            size_t nl = eq ? (size_t)(eq - w) : strlen(w);
            snprintf(name, sizeof name, "%.*s", (int)nl, w);
            if (sg_config_check_value(name, eq ? eq + 1 : NULL, f->e[i].where) != 0) {
                f->problems++;
                break;
            }
        }
    return f->problems ? SG_EINVAL : 0;
}

const char *sg_cfgfile_where(const char *word)
{
    for (size_t i = 0; word && i < g_n_where; i++)
        if (g_where[i].word == word)
            return g_where[i].where;
    return NULL;
}

void sg_cfgfile_free(sg_cfgfile_t *cf)
{
    if (cf->expanded)
        free(cf->argv);
    free(cf->path);
    free(cf->own);
    entries_free(g_entries, g_n_entries);
    g_entries = NULL;
    g_n_entries = 0;
    free(g_where);
    g_where = NULL;
    g_n_where = 0;
    memset(cf, 0, sizeof *cf);
}

static int short_takes_arg(const char *shorts, char c)
{
    const char *p = c && c != ':' ? strchr(shorts, c) : NULL;
    return p && p[1] == ':' ? (p[2] == ':' ? 2 : 1) : 0;
}

int sg_cfgfile_expand(int argc, char **argv, sg_cfgfile_t *out)
{
    memset(out, 0, sizeof *out);
    out->argc = argc;
    out->argv = argv;
    const char *shorts;
    const struct option *longs = sg_config_options(&shorts);
    /* argv's options (as groups), and where its --config is: scanned as getopt_long will */
    size_t cap = 1;
    for (int i = 1; i < argc; i++)
        cap += strlen(argv[i]);
    int *given = calloc(cap, sizeof *given); /* at most one option per character of argv */
    bool *drop = calloc((size_t)argc + 1, sizeof *drop);
    if (!given || !drop) {
        free(given);
        free(drop);
        return SG_ENOMEM;
    }
    size_t n_given = 0;
    const char *path = NULL;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (a[0] != '-' || !a[1])
            continue;
        const char *cfg_value = NULL;
        int cfg_word = i;
        if (a[1] == '-') {
            size_t nl = strcspn(a + 2, "=");
            char name[128];
            if (nl >= sizeof name)
                continue;
            memcpy(name, a + 2, nl);
            name[nl] = '\0';
            const struct option *o = find_opt(longs, name);
            if (!o)
                continue;
            bool has_eq = a[2 + nl] == '=';
            if (strcmp(name, "config") == 0) {
                cfg_value = has_eq ? a + 3 + nl : (i + 1 < argc ? argv[++i] : NULL);
            } else {
                given[n_given++] = group_of(o);
                if (o->has_arg == required_argument && !has_eq)
                    i++;
                continue;
            }
        } else {
            /* a cluster of short options: -vk, -m NAME, -mNAME; -f FILE stands alone */
            bool is_cfg = false;
            for (const char *p = a + 1; *p; p++) {
                if (*p == 'f') {
                    if (p != a + 1) {
                        fprintf(stderr, "surge: -f: give it as a word of its own: -f FILE\n");
                        rc = SG_EINVAL;
                        break;
                    }
                    is_cfg = true;
                    cfg_value = p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : NULL);
                    break;
                }
                const sg_opt_t *r = sg_opt_by_val(*p);
                given[n_given++] = r ? group_of_row(r) : -1 - *p;
                int t = short_takes_arg(shorts, *p);
                if (t == 1 && !p[1])
                    i++;
                if (t)
                    break;
            }
            if (rc)
                break;
            if (!is_cfg)
                continue;
        }
        if (!cfg_value) {
            fprintf(stderr, "surge: --config: expects a YAML file\n");
            rc = SG_EINVAL;
            break;
        }
        if (path) {
            fprintf(stderr, "surge: --config: given twice (%s and %s); give one file\n", path, cfg_value);
            rc = SG_EINVAL;
            break;
        }
        path = cfg_value;
        for (int j = cfg_word; j <= i; j++)
            drop[j] = true;
    }
    if (rc || !path) {
        free(given);
        free(drop);
        return rc;
    }
    file_t f = {.path = path};
    rc = load(&f, longs);
    size_t n_words = 0;
    for (size_t i = 0; i < f.n; i++)
        n_words += f.e[i].n_words;
    char **nargv = rc == 0 ? calloc((size_t)argc + n_words + 1, sizeof *nargv) : NULL;
    g_where = rc == 0 ? calloc(n_words + 1, sizeof *g_where) : NULL;
    out->path = rc == 0 ? strdup(path) : NULL;
    if (rc == 0 && (!nargv || !g_where || !out->path))
        rc = SG_ENOMEM;
    if (rc) {
        free(nargv);
        free(g_where);
        g_where = NULL;
        free(out->path);
        out->path = NULL;
        entries_free(f.e, f.n);
        free(given);
        free(drop);
        out->argv = argv;
        return rc == SG_ENOMEM ? (fprintf(stderr, "surge: out of memory reading %s\n", path), rc) : rc;
    }
    int n = 0;
    nargv[n++] = argv[0];
    for (size_t i = 0; i < f.n; i++) {
        bool overridden = false;
        for (size_t j = 0; j < n_given && !overridden; j++)
            overridden = given[j] == f.e[i].group;
        if (overridden)
            continue;
        if (f.e[i].refuse && rc == 0) {
            fprintf(stderr, "surge: %s: %s\n", f.e[i].where, f.e[i].refuse);
            rc = SG_EINVAL;
        }
        for (size_t j = 0; j < f.e[i].n_words; j++) {
            g_where[g_n_where].word = f.e[i].words[j];
            g_where[g_n_where++].where = f.e[i].where;
            nargv[n++] = f.e[i].words[j];
        }
    }
    for (int i = 1; i < argc; i++)
        if (!drop[i])
            nargv[n++] = argv[i];
    nargv[n] = NULL;
    if (rc) { /* a refused entry: nothing of the file is parsed */
        free(nargv);
        free(g_where);
        g_where = NULL;
        g_n_where = 0;
        free(out->path);
        out->path = NULL;
        entries_free(f.e, f.n);
        free(given);
        free(drop);
        return rc;
    }
    g_entries = f.e;
    g_n_entries = f.n;
    memcpy(out->sha256, f.sha256, sizeof out->sha256);
    out->argc = n;
    out->argv = nargv;
    out->expanded = true;
    free(given);
    free(drop);
    return 0;
}

/* ---------- surge config ---------- */

static void config_usage(FILE *out)
{
    fprintf(out,
            "Usage: surge config validate FILE [FLAGS...]   check a config file as `surge profile --config FILE\n"
            "                                              FLAGS` would take it; nothing is sent. Every problem\n"
            "                                              is one line with FILE:LINE; exit 0 or 2\n"
            "       surge config expand FILE [FLAGS...]     print the resolved configuration (every default filled\n"
            "                                              in) as JSON, as the run records it (input_config)\n"
            "       surge config init                       print a commented template config file\n"
            "       surge config keys                       print every key (surge profile's long flags)\n"
            "\n"
            "A config file is a YAML mapping whose keys are surge profile's long flags, with dashes or\n"
            "underscores: `isl: 128`, `concurrency: [1, 2, 4]` (a sweep), `header: [\"A: b\", \"C: d\"]`\n"
            "(repeatable flags), `streaming: true`. Run it with surge profile --config FILE (or -f FILE); flags\n"
            "on the command line win over the file's (docs/config.md).\n");
}

static void print_keys(void)
{
    const struct option *longs = sg_config_options(NULL);
    for (const struct option *o = longs; o->name; o++)
        if (!not_a_key(o))
            printf("%s\n", o->name);
}

/* A template: a few keys to fill in, then surge profile --help as comments, so it lists every key there is. */
static int print_template(void)
{
    char *help = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&help, &len);
    if (!m)
        return 1;
    sg_config_usage(m);
    fclose(m);
    printf("# surge profile configuration: `surge profile --config THIS_FILE`, `surge config validate THIS_FILE`.\n"
           "# Keys are surge profile's long flags (dashes or underscores); flags given on the command line win.\n"
           "# A list is a sweep for concurrency and request-rate, and several values for a repeatable flag.\n"
           "model: my-model\n"
           "url: http://localhost:8000\n"
           "endpoint-type: chat\n"
           "streaming: true\n"
           "synthetic-input-tokens-mean: 550\n"
           "output-tokens-mean: 256\n"
           "concurrency: 1\n"
           "request-count: 100\n"
           "# header: [\"X-Team: perf\"]\n"
           "# concurrency: [1, 2, 4, 8]\n"
           "# slo: [\"time_to_first_token:p99<500\"]\n"
           "#\n"
           "# Every flag (surge profile --help):\n");
    for (char *line = help; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) : strlen(line);
        printf(l ? "#   %.*s\n" : "#\n", (int)l, line);
        line = nl ? nl + 1 : NULL;
    }
    free(help);
    return 0;
}

int sg_config_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        config_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "init") == 0 || strcmp(verb, "keys") == 0) {
        if (argc > 2) {
            fprintf(stderr, "surge: config %s takes no arguments\n", verb);
            return 2;
        }
        if (verb[0] == 'k') {
            print_keys();
            return 0;
        }
        return print_template();
    }
    bool validate = strcmp(verb, "validate") == 0;
    if (!validate && strcmp(verb, "expand") != 0) {
        fprintf(stderr, "surge: config: unknown action \"%s\" (validate, expand, init or keys)\n", verb);
        return 2;
    }
    if (argc < 3 || argv[2][0] == '-') {
        fprintf(stderr, "surge: config %s: expects a FILE first\n", verb);
        return 2;
    }
    /* the words surge profile would get: profile --config FILE FLAGS... */
    char **pargv = calloc((size_t)argc + 2, sizeof *pargv);
    if (!pargv)
        return 2;
    int n = 0;
    pargv[n++] = "profile";
    pargv[n++] = "--config";
    pargv[n++] = argv[2];
    for (int i = 3; i < argc; i++)
        pargv[n++] = argv[i];
    sg_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    int rc = sg_config_parse(&cfg, n, pargv);
    free(pargv);
    if (rc != 0) {
        sg_config_free(&cfg);
        if (rc == 1) /* --help or --version among the flags */
            return 0;
        fprintf(stderr, "surge: %s: not valid\n", argv[2]);
        return 2;
    }
    int code = 0;
    if (validate) {
        printf("%s: valid (sha256 %s)\n", argv[2], cfg.config_sha256);
    } else {
        char *text = sg_config_to_json(&cfg);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        char *pretty = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (pretty)
            printf("%s\n", pretty);
        else
            code = 2;
        free(pretty);
        json_decref(j);
        free(text);
    }
    sg_config_free(&cfg);
    return code;
}
