/*
 * `surge profile` flags → sg_config_t. GenAI-Perf's flag names, plus AIPerf's and vLLM's where GenAI-Perf has
 * none, so that scripts and habits carry over. Every rejected value gets one line on stderr that names the flag
 * and says what was expected; peers' flags that surge does not implement are recognised and explained rather
 * than reported as unknown.
 */
#define _GNU_SOURCE
#include "sg_config.h"
#include "config_int.h"
#include "sg_cfgfile.h"
#include "sg_sched.h"
#include "sg_scrape.h"

#include "sg_input.h"
#include "sg_tools.h"
#include "sg_kserve.h"
#include "sg_loop.h"
#include "sg_options.h"
#include "sg_opts.h"
#include "sg_tcp.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_URL "localhost:8000"
#define DEFAULT_TRITON_URL "localhost:8001" /* Triton's gRPC port, GenAI-Perf's default for triton */
#define DEFAULT_REQUEST_COUNT 100
#define DEFAULT_EXPORT_FILE "profile_export.json"
#define DEFAULT_PREFIX_LEN 100 /* GenAI-Perf's default --prefix-prompt-length */
#define DEFAULT_BLOCK_SIZE 512 /* AIPerf's default --isl-block-size: tokens per hash_ids block of a trace */

/* The long name of an option value, for messages: users typed -m but the help lists --model. */
static const char *opt_name(int val)
{
    const sg_opt_t *r = sg_opt_by_val(val);
    return r ? r->name : "?";
}

/* "FILE:LINE" of the config-file key the option being parsed came from (sg_cfgfile_where); NULL for argv's own */
static const char *fail_where;
/* sg_config_check_value: a value checked alone says nothing but its problem (the full parse prints any note) */
static bool quiet_notes;

/*
 * One line on stderr: "surge: --flag: problem". Control characters are escaped so that a value carrying a
 * newline cannot split the line.
 */
__attribute__((format(printf, 2, 3))) static int fail(const char *opt, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char line[1200];
    size_t off = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && off + 5 < sizeof line; p++) {
        if (*p == '\n')
            off += (size_t)snprintf(line + off, sizeof line - off, "\\n");
        else if (*p == '\r')
            off += (size_t)snprintf(line + off, sizeof line - off, "\\r");
        else if (*p < 0x20 || *p == 0x7f)
            off += (size_t)snprintf(line + off, sizeof line - off, "\\x%02x", *p);
        else
            line[off++] = (char)*p;
    }
    line[off] = '\0';
    const char *w = fail_where ? fail_where : "";
    if (opt)
        fprintf(stderr, "surge: %s%s--%s: %s\n", w, *w ? ": " : "", opt, line);
    else
        fprintf(stderr, "surge: %s%s%s\n", w, *w ? ": " : "", line);
    return SG_EINVAL;
}

static int oom(void)
{
    fprintf(stderr, "surge: out of memory while parsing the command line\n");
    return SG_ENOMEM;
}

/* ---------- values ---------- */

static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char range[96];
    if (max == UINT64_MAX)
        snprintf(range, sizeof range, "a whole number >= %" PRIu64, min);
    else
        snprintf(range, sizeof range, "a whole number from %" PRIu64 " to %" PRIu64, min, max);
    /* strtoull accepts leading spaces and a minus sign (wrapping it around): neither is a count */
    if (!isdigit((unsigned char)s[0]))
        return fail(opt, "expected %s, got \"%s\"", range, s);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return fail(opt, "expected %s, got \"%s\"", range, s);
    if (errno == ERANGE || v < min || v > max)
        return fail(opt, "expected %s, got %s", range, s);
    *out = (uint64_t)v;
    return 0;
}

static int parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    int rc = parse_u64(opt, s, min, max, &v);
    if (rc == 0)
        *out = (uint32_t)v;
    return rc;
}

/* A finite number in [lo, hi] (or (lo, hi] when lo_open); desc says that in words for the message. */
static int parse_num(const char *opt, const char *s, const char *desc, double lo, bool lo_open, double hi, double *out)
{
    unsigned char c = (unsigned char)s[0];
    if (!(isdigit(c) || c == '.' || c == '-' || c == '+'))
        return fail(opt, "expected %s, got \"%s\"", desc, s);
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(v) || errno == ERANGE)
        return fail(opt, "expected %s, got \"%s\"", desc, s);
    if (v < lo || (lo_open && v == lo) || v > hi)
        return fail(opt, "expected %s, got %s", desc, s);
    *out = v;
    return 0;
}

static int set_str(char **dst, const char *src)
{
    char *s = strdup(src);
    if (!s)
        return oom();
    free(*dst);
    *dst = s;
    return 0;
}

/* ---------- URL ---------- */

static bool host_char(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_';
}

/*
 * Accepted: host, host:port, http://host[:port][/base], [v6]:port, http://[v6][:port][/base]. The base path is
 * kept (without its trailing slash) and prefixed to the endpoint, as with a server mounted under a prefix.
 */
static int parse_url(sg_config_t *cfg, const char *url)
{
    const char *opt = "url";
    if (!*url)
        return fail(opt, "expected host:port or http://host[:port][/path], got an empty value");
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= ' ' || *p >= 0x7f)
            return fail(opt, "must not contain spaces, control or non-ASCII characters, got \"%s\"", url);

    const char *rest = url;
    bool tls = false;
    const char *sep = strstr(url, "://");
    if (sep) {
        size_t scheme_len = (size_t)(sep - url);
        if (scheme_len == 5 && strncasecmp(url, "https", 5) == 0)
            tls = true;
        else if (!(scheme_len == 4 && strncasecmp(url, "http", 4) == 0))
            return fail(opt, "unsupported scheme \"%.*s\": only http:// and https:// are supported", (int)scheme_len,
                        url);
        rest = sep + 3;
    }
    size_t auth_len = strcspn(rest, "/?#");
    const char *path = rest + auth_len;
    if (strpbrk(path, "?#"))
        return fail(opt, "must not carry a query or fragment, got \"%s\"", url);
    if (memchr(rest, '@', auth_len))
        return fail(opt, "credentials in the URL are not supported: use --api-key or -H 'Authorization: ...'");

    char host[256];
    const char *port_str = NULL;
    size_t port_len = 0;
    bool v6 = false;
    if (auth_len > 0 && rest[0] == '[') {
        const char *close = memchr(rest, ']', auth_len);
        if (!close)
            return fail(opt, "missing ']' after the IPv6 address in \"%s\"", url);
        size_t hl = (size_t)(close - rest - 1);
        if (hl == 0 || hl >= sizeof host)
            return fail(opt, "expected an IPv6 address between [ and ], got \"%s\"", url);
        memcpy(host, rest + 1, hl);
        host[hl] = '\0';
        const char *after = close + 1, *end = rest + auth_len;
        if (after < end) {
            if (*after != ':')
                return fail(opt, "expected ':port' after ']' in \"%s\"", url);
            port_str = after + 1;
            port_len = (size_t)(end - port_str);
        }
        /* a zone (fe80::1%eth0) is allowed; the address part must be a real IPv6 address */
        char addr[256];
        size_t al = strcspn(host, "%");
        memcpy(addr, host, al);
        addr[al] = '\0';
        struct in6_addr a6;
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return fail(opt, "\"%s\" is not a valid IPv6 address", host);
        v6 = true;
    } else {
        const char *colon = memchr(rest, ':', auth_len);
        size_t hl = colon ? (size_t)(colon - rest) : auth_len;
        if (colon && memchr(colon + 1, ':', auth_len - hl - 1))
            return fail(opt, "IPv6 addresses need brackets, e.g. http://[::1]:8000 (got \"%s\")", url);
        if (hl == 0)
            return fail(opt, "missing host name in \"%s\"", url);
        if (hl >= sizeof host)
            return fail(opt, "host name too long in \"%s\"", url);
        for (size_t i = 0; i < hl; i++)
            if (!host_char((unsigned char)rest[i]))
                return fail(opt, "invalid character '%c' in host name \"%.*s\"", rest[i], (int)hl, rest);
        memcpy(host, rest, hl);
        host[hl] = '\0';
        if (colon) {
            port_str = colon + 1;
            port_len = auth_len - hl - 1;
        }
    }

    unsigned port = tls ? 443 : 80;
    if (port_str) {
        if (port_len == 0)
            return fail(opt, "empty port in \"%s\"", url);
        port = 0;
        for (size_t i = 0; i < port_len; i++) {
            if (!isdigit((unsigned char)port_str[i]) || port > 65535)
                return fail(opt, "expected a port from 1 to 65535, got \"%.*s\"", (int)port_len, port_str);
            port = port * 10 + (unsigned)(port_str[i] - '0');
        }
        if (port == 0 || port > 65535)
            return fail(opt, "expected a port from 1 to 65535, got \"%.*s\"", (int)port_len, port_str);
    }

    size_t path_len = strlen(path);
    while (path_len > 0 && path[path_len - 1] == '/')
        path_len--;

    char host_header[300];
    snprintf(host_header, sizeof host_header, v6 ? "[%s]:%u" : "%s:%u", host, port);
    char *n_url = strdup(url), *n_host = strdup(host), *n_hh = strdup(host_header), *n_base = strndup(path, path_len);
    if (!n_url || !n_host || !n_hh || !n_base) {
        free(n_url);
        free(n_host);
        free(n_hh);
        free(n_base);
        return oom();
    }
    free(cfg->url);
    free(cfg->host);
    free(cfg->host_header);
    free(cfg->base_path);
    cfg->url = n_url;
    cfg->host = n_host;
    cfg->host_header = n_hh;
    cfg->base_path = n_base;
    cfg->port = (uint16_t)port;
    cfg->tls = tls;
    return 0;
}

/*
 * -u/--url, repeatable (AIPerf's multi-URL load balancing): the first sets the URL fields as before; each one is
 * also kept in cfg->urls. URLs must share the scheme and the base path (a request is rendered once, its path and
 * TLS for all); hosts and ports may differ.
 */
static int add_url(sg_config_t *cfg, const char *arg)
{
    if (cfg->n_urls == SG_MAX_URLS)
        return fail("url", "given more than %d times", SG_MAX_URLS);
    sg_config_t t;
    memset(&t, 0, sizeof t);
    int rc = parse_url(&t, arg);
    if (rc == 0 && cfg->n_urls > 0) {
        if (t.tls != cfg->tls)
            rc = fail("url", "every URL must use the same scheme: %s is %s, the first (%s) is %s", arg,
                      t.tls ? "https://" : "http://", cfg->urls[0].url, cfg->tls ? "https://" : "http://");
        else if (strcmp(t.base_path, cfg->base_path) != 0)
            rc = fail("url",
                      "every URL must have the same base path (the requests are rendered once): %s has \"%s\", the "
                      "first (%s) \"%s\"",
                      arg, t.base_path, cfg->urls[0].url, cfg->base_path);
        for (size_t i = 0; i < cfg->n_urls && rc == 0; i++)
            if (strcmp(cfg->urls[i].host_header, t.host_header) == 0)
                rc = fail("url", "%s names the same server as %s (%s)", arg, cfg->urls[i].url, t.host_header);
    }
    if (rc == 0 && cfg->n_urls == 0)
        rc = parse_url(cfg, arg);
    if (rc == 0) {
        cfg->urls[cfg->n_urls++] = (sg_url_target_t){t.url, t.host, t.host_header, t.port};
        t.url = t.host = t.host_header = NULL;
    }
    free(t.url);
    free(t.host);
    free(t.host_header);
    free(t.base_path);
    return rc;
}

/* ---------- headers ---------- */

static bool tchar(unsigned char c)
{
    /* RFC 9110 token characters: what a header name may contain */
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int push_header(sg_config_t *cfg, char *line)
{
    char **h = realloc(cfg->headers, (cfg->n_headers + 2) * sizeof *h);
    if (!h) {
        free(line);
        return oom();
    }
    cfg->headers = h;
    h[cfg->n_headers++] = line;
    h[cfg->n_headers] = NULL;
    return 0;
}

static int add_header(sg_config_t *cfg, const char *arg)
{
    const char *opt = "header";
    /* 'Name: value', or vLLM's Name=value ('=' cannot be in a header name, so the first of the two separates) */
    const char *colon = arg + strcspn(arg, ":=");
    if (!*colon)
        return fail(opt, "expected 'Name: value' (or vLLM's Name=value), got \"%s\"", arg);
    size_t nl = (size_t)(colon - arg);
    if (nl == 0)
        return fail(opt, "missing header name before ':' in \"%s\"", arg);
    for (size_t i = 0; i < nl; i++)
        if (!tchar((unsigned char)arg[i]))
            return fail(opt, "invalid character '%c' in header name \"%.*s\"", arg[i], (int)nl, arg);
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vl = strlen(v);
    while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    for (size_t i = 0; i < vl; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(opt, "header value must not contain CR, LF or other control characters: \"%s\"", arg);
    }
    /* surge frames every body itself; a second length or a transfer coding would corrupt the request */
    if ((nl == 14 && strncasecmp(arg, "Content-Length", nl) == 0) ||
        (nl == 17 && strncasecmp(arg, "Transfer-Encoding", nl) == 0))
        return fail(opt, "%.*s is set by surge and cannot be overridden", (int)nl, arg);
    char *line = malloc(nl + 2 + vl + 1);
    if (!line)
        return oom();
    memcpy(line, arg, nl);
    memcpy(line + nl, ": ", 2);
    memcpy(line + nl + 2, v, vl);
    line[nl + 2 + vl] = '\0';
    return push_header(cfg, line);
}

static bool has_header(const sg_config_t *cfg, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < cfg->n_headers; i++)
        if (strncasecmp(cfg->headers[i], name, n) == 0 && cfg->headers[i][n] == ':')
            return true;
    return false;
}

/* ---------- --extra-inputs ---------- */

/*
 * name:value typing, as GenAI-Perf users expect: whatever parses as JSON (numbers, true/false, null, arrays,
 * objects, "quoted strings") is taken as that JSON value, so `stop:"\n"` is a newline; anything else is a string.
 */
static json_t *typed_value(const char *v)
{
    json_error_t e;
    json_t *j = json_loads(v, JSON_DECODE_ANY, &e);
    if (j)
        return j;
    /* Python spellings, since GenAI-Perf users write them */
    if (strcasecmp(v, "true") == 0)
        return json_true();
    if (strcasecmp(v, "false") == 0)
        return json_false();
    /* an integer beyond int64 is still a number to the server */
    j = json_loads(v, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &e);
    if (j)
        return j;
    return json_string(v); /* NULL when not UTF-8 */
}

static int add_extra_input(json_t *acc, const char *arg)
{
    const char *opt = "extra-inputs";
    const char *p = arg;
    while (*p == ' ' || *p == '\t' || *p == '\n')
        p++;
    if (*p == '{') {
        json_error_t e;
        json_t *obj = json_loads(arg, 0, &e);
        if (!obj)
            return fail(opt, "not a valid JSON object (%s at column %d): %s", e.text, e.column, arg);
        if (!json_is_object(obj)) {
            json_decref(obj);
            return fail(opt, "expected a JSON object, got \"%s\"", arg);
        }
        int rc = json_object_update(acc, obj);
        json_decref(obj);
        return rc == 0 ? 0 : oom();
    }
    const char *colon = strchr(arg, ':');
    if (!colon)
        return fail(opt, "expected name:value or a JSON object, got \"%s\"", arg);
    if (colon == arg)
        return fail(opt, "missing name before ':' in \"%s\"", arg);
    char *name = strndup(arg, (size_t)(colon - arg));
    if (!name)
        return oom();
    json_t *val = typed_value(colon + 1);
    if (!val) {
        free(name);
        return fail(opt, "value is not valid UTF-8 in \"%s\"", arg);
    }
    int rc = json_object_set_new(acc, name, val);
    free(name);
    if (rc != 0)
        return fail(opt, "name is not valid UTF-8 in \"%s\"", arg);
    return 0;
}

/* ---------- --goodput ---------- */

static int add_slo(sg_config_t *cfg, const char *pair)
{
    const char *opt = "goodput";
    const char *colon = strchr(pair, ':');
    sg_metric_id_t id;
    if (!colon || colon == pair)
        return fail(opt, "expected metric:value pairs such as time_to_first_token:200, got \"%s\"", pair);
    for (int m = 0; m < SG_M__COUNT; m++) {
        const char *tag = sg_metric_tag((sg_metric_id_t)m);
        if (!sg_metric_slo_ok((sg_metric_id_t)m) && strlen(tag) == (size_t)(colon - pair) &&
            memcmp(tag, pair, strlen(tag)) == 0)
            return fail(opt,
                        "%s describes the workload, not the service: SLOs take latencies or "
                        "output_token_throughput_per_user",
                        tag);
    }
    if (sg_metric_find(pair, (size_t)(colon - pair), &id) != 0) {
        char names[512];
        size_t off = 0;
        for (int m = 0; m < SG_M__COUNT; m++)
            if (sg_metric_slo_ok((sg_metric_id_t)m) && sg_metric_tag((sg_metric_id_t)m) && off < sizeof names)
                off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "",
                                        sg_metric_tag((sg_metric_id_t)m));
        return fail(opt, "unknown metric \"%.*s\" (known: %s; or ttft, tpot, e2el)", (int)(colon - pair), pair,
                    off ? names : "none");
    }
    double v;
    char what[160];
    snprintf(what, sizeof what, "a positive number for %.*s (%s)", (int)(colon - pair), pair,
             id == SG_M_TOKENS_PER_USER ? "tokens/s" : "ms");
    if (parse_num(opt, colon + 1, what, 0, true, HUGE_VAL, &v) != 0)
        return SG_EINVAL;
    for (size_t i = 0; i < cfg->n_slos; i++)
        if (cfg->slos[i].metric == id)
            return fail(opt, "%s is given twice", sg_metric_tag(id) ? sg_metric_tag(id) : "a metric");
    if (cfg->n_slos >= SG_ARRAY_LEN(cfg->slos))
        return fail(opt, "at most %zu SLOs", SG_ARRAY_LEN(cfg->slos));
    cfg->slos[cfg->n_slos].metric = id;
    cfg->slos[cfg->n_slos].threshold = v;
    cfg->n_slos++;
    return 0;
}

static int parse_goodput(sg_config_t *cfg, const char *arg)
{
    char *copy = strdup(arg);
    if (!copy)
        return oom();
    int rc = 0, n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ,\t\n", &save); tok; tok = strtok_r(NULL, " ,\t\n", &save)) {
        rc = add_slo(cfg, tok);
        if (rc)
            break;
        n++;
    }
    free(copy);
    if (rc == 0 && n == 0)
        rc = fail("goodput", "expected metric:value pairs such as \"time_to_first_token:200 request_latency:1000\"");
    return rc;
}

/* ---------- flags we recognise but do not implement ---------- */

static int not_supported(int val)
{
    switch (val) {
    case OPT_INPUT_DATASET:
        return fail("input-dataset", "not supported: surge fetches no hosted datasets; download one and give it "
                                     "with --input-file (ShareGPT, GenAI-Perf JSONL, ...), or use synthetic prompts");
    default:
        return fail(NULL, "unsupported option");
    }
}

/* ---------- the parse ---------- */

static unsigned usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (unsigned)n;
    }
    return 1;
}

/* Whether argv[i] is an option whose value is the next argument (so a "--" there is a value, not the marker). */
static bool takes_next_arg(const char *a)
{
    if (a[0] != '-')
        return false;
    if (a[1] != '-')
        return a[1] && a[2] == '\0' && strchr("muH", a[1]);
    if (strchr(a, '='))
        return false;
    const sg_opt_t *r = sg_opt_find(a + 2);
    return r && r->has_arg == required_argument;
}

static int finish_ramp_cancel(sg_config_t *cfg, parse_state_t *st);

/* ---------- load points: sweeps and the capacity search ---------- */

#define MAX_SWEEP_POINTS 1000
#define DEFAULT_PROBE_S                                                                                                \
    10 /* --search: each probe's --benchmark-duration unless given */ /* a range that makes more is a typo (1:100000), \
                                                                         not a plan */

/* One value of a sweep: a concurrency (a whole number >= 1) or a request rate (a positive number, not inf). */
static int sweep_value(const char *opt, sg_sweep_kind_t kind, const char *s, double *out)
{
    if (kind == SG_SWEEP_CONCURRENCY) {
        uint32_t v = 0;
        int rc = parse_u32(opt, s, 1, MAX_CONCURRENCY, &v);
        *out = v;
        return rc;
    }
    if (strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0)
        return fail(opt, "inf cannot be one point of a sweep (every request due at the start is not a rate); give "
                         "finite rates, and run inf on its own");
    return parse_num(opt, s, "positive request rates (requests/s)", 0, true, MAX_RATE, out);
}

static int sweep_begin(sg_config_t *cfg, parse_state_t *st, const char *opt, sg_sweep_kind_t kind)
{
    if (st->sweep_flag)
        return fail(opt,
                    "a sweep is already given by --%s: one sweep per run (a list or a range, of concurrency "
                    "or of request rate)",
                    st->sweep_flag);
    st->sweep_flag = opt;
    cfg->sweep = kind;
    return 0;
}

static int sweep_push(sg_config_t *cfg, const char *opt, double v)
{
    if (cfg->n_sweep_values >= MAX_SWEEP_POINTS)
        return fail(opt, "more than %d load points", MAX_SWEEP_POINTS);
    double *a = realloc(cfg->sweep_values, (cfg->n_sweep_values + 1) * sizeof *a);
    if (!a)
        return oom();
    cfg->sweep_values = a;
    a[cfg->n_sweep_values++] = v;
    return 0;
}

/* AIPerf's lists: --concurrency 1,4,16,64 or --request-rate 10,20,40, run in the order given. */
static int parse_sweep_list(sg_config_t *cfg, parse_state_t *st, const char *opt, sg_sweep_kind_t kind, const char *arg)
{
    int rc = sweep_begin(cfg, st, opt, kind);
    const char *p = arg;
    while (rc == 0) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            return fail(opt,
                        "an empty value in the list \"%s\" (expected values separated by commas, such as "
                        "%s)",
                        arg, kind == SG_SWEEP_CONCURRENCY ? "1,4,16,64" : "10,20,40");
        char one[64];
        if (len >= sizeof one)
            return fail(opt, "a value too long in the list \"%s\"", arg);
        memcpy(one, p, len);
        one[len] = '\0';
        double v;
        rc = sweep_value(opt, kind, one, &v);
        for (size_t i = 0; rc == 0 && i < cfg->n_sweep_values; i++)
            if (cfg->sweep_values[i] == v)
                rc = fail(opt,
                          "%s appears twice in the list \"%s\" (each point has a directory of its own, named "
                          "by its value)",
                          one, arg);
        if (rc == 0)
            rc = sweep_push(cfg, opt, v);
        if (!comma)
            break;
        p = comma + 1;
    }
    if (rc == 0 && cfg->n_sweep_values < 2)
        return fail(opt, "a list needs two values or more, got \"%s\"", arg);
    return rc;
}

/*
 * perf_analyzer's ranges: START:END[:STEP], from START up to END (included when the steps land on it) in
 * additive steps; STEP defaults to 1, END to START.
 */
static int parse_sweep_range(sg_config_t *cfg, parse_state_t *st, const char *opt, sg_sweep_kind_t kind,
                             const char *arg)
{
    int rc = sweep_begin(cfg, st, opt, kind);
    if (rc)
        return rc;
    char buf[192];
    if (strlen(arg) >= sizeof buf)
        return fail(opt, "expected START:END[:STEP], got a value too long");
    snprintf(buf, sizeof buf, "%s", arg);
    char *part[3] = {buf, NULL, NULL};
    size_t n = 1;
    for (char *c = buf; *c; c++)
        if (*c == ':') {
            if (n == 3)
                return fail(opt, "expected START:END[:STEP], got \"%s\"", arg);
            *c = '\0';
            part[n++] = c + 1;
        }
    double start, end, step = 1;
    rc = sweep_value(opt, kind, part[0], &start);
    if (rc == 0)
        rc = n > 1 ? sweep_value(opt, kind, part[1], &end) : (end = start, 0);
    if (rc == 0 && n > 2)
        rc = sweep_value(opt, kind, part[2], &step);
    if (rc)
        return rc;
    if (end < start)
        return fail(opt, "END (%s) is below START (%s): give START:END[:STEP] with END >= START", part[1], part[0]);
    double span = (end - start) / step;
    if (span + 1 > MAX_SWEEP_POINTS)
        return fail(opt, "%s makes %.0f load points, more than %d: use a larger STEP", arg, floor(span) + 1,
                    MAX_SWEEP_POINTS);
    /* from the index, so rounding never accumulates; a point within 1e-9 of END is END */
    for (unsigned k = 0; rc == 0; k++) {
        double v = start + (double)k * step;
        if (v > end * (1 + 1e-9))
            break;
        rc = sweep_push(cfg, opt, v > end ? end : v);
    }
    return rc;
}

static int parse_search_range(sg_config_t *cfg, const char *opt, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char lo[64];
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    if (len == 0 || len >= sizeof lo)
        return fail(opt, "expected LO:HI (or LO: for no upper bound), got \"%s\"", arg);
    memcpy(lo, arg, len);
    lo[len] = '\0';
    int rc = parse_num(opt, lo, "LO:HI with 0 < LO", 0, true, MAX_RATE, &cfg->search_lo);
    if (rc == 0 && colon && colon[1]) {
        rc = parse_num(opt, colon + 1, "LO:HI with HI > LO", 0, true, MAX_RATE, &cfg->search_hi);
        if (rc == 0 && cfg->search_hi <= cfg->search_lo)
            return fail(opt, "HI (%s) must be above LO (%s)", colon + 1, lo);
    }
    return rc;
}

/* --num-profile-runs once every flag is in: what a multi-run combines with (engine/multirun.c). */
static int finish_multirun(const sg_config_t *cfg, const parse_state_t *st)
{
    if (cfg->num_profile_runs < 2) {
        if (st->multirun_flag)
            return fail(st->multirun_flag, "only applies to a multi-run (--num-profile-runs 2 or more)");
        return 0;
    }
    if (cfg->search)
        return fail("num-profile-runs", "cannot be combined with --search: the search runs its own probes (repeat "
                                        "each with --search-trials N)");
    return 0; /* over several processes: refused by dist_prepare, which knows the launcher's world size too */
}

/* The search and sweep flags once every flag is in: what they combine with, and the first point's load. */
static int finish_points(sg_config_t *cfg, parse_state_t *st)
{
    if (cfg->search) {
        const char *what = cfg->search == SG_SEARCH_MAX_RATE ? "max-request-rate" : "max-concurrency";
        if (st->sweep_flag)
            return fail(st->sweep_flag, "cannot be combined with --search: the search chooses its own load points");
        if (st->rate_given || st->concurrency_given)
            return fail(st->rate_given ? "request-rate" : "concurrency",
                        "cannot be combined with --search %s: the search chooses the %s (bound it with "
                        "--search-range LO:HI)",
                        what, cfg->search == SG_SEARCH_MAX_RATE ? "request rate" : "concurrency");
        if (cfg->search == SG_SEARCH_MAX_CONCURRENCY && (st->max_concurrency_given || st->distribution_given))
            return fail(st->max_concurrency_given ? "max-concurrency" : "request-distribution",
                        "only applies to an open loop; --search max-concurrency runs closed loops");
        if (cfg->fixed_schedule)
            return fail("search", "cannot be combined with --fixed-schedule: the trace's timestamps set the load");
        if (cfg->n_slo_checks == 0)
            return fail("search", "needs at least one --slo to decide what passes, e.g. --slo "
                                  "'time_to_first_token:p99<500'");
        if (cfg->search_max_trials < cfg->search_trials) {
            if (st->search_max_trials_given)
                return fail("search-max-trials",
                            "%u is fewer than --search-trials %u: it bounds how many probes a "
                            "value may pool while its verdict is inconclusive",
                            cfg->search_max_trials, cfg->search_trials);
            cfg->search_max_trials = cfg->search_trials;
        }
        /* a probe long enough for a backlog to show (search.c): 10 s unless the user bounds it */
        if (!st->count_given && !st->duration_given) {
            cfg->benchmark_duration_s = DEFAULT_PROBE_S;
            st->duration_given = true;
        }
        if (cfg->search == SG_SEARCH_MAX_CONCURRENCY) {
            if (cfg->search_lo != floor(cfg->search_lo) || (cfg->search_hi && cfg->search_hi != floor(cfg->search_hi)))
                return fail("search-range", "--search max-concurrency needs whole numbers, got %g:%g", cfg->search_lo,
                            cfg->search_hi);
            cfg->concurrency = (uint32_t)cfg->search_lo;
            st->concurrency_given = true;
        } else {
            cfg->request_rate = cfg->search_lo;
            st->rate_given = true;
        }
    } else {
        const char *flag = st->search_range_given        ? "search-range"
                           : st->search_precision_given  ? "search-precision"
                           : st->search_trials_given     ? "search-trials"
                           : st->search_max_trials_given ? "search-max-trials"
                                                         : NULL;
        if (flag)
            return fail(flag, "only applies with --search max-request-rate or --search max-concurrency");
    }
    if (st->sweep_flag) {
        bool rate = cfg->sweep == SG_SWEEP_RATE;
        if (rate ? st->concurrency_given : st->rate_given)
            return fail(st->sweep_flag, "cannot be combined with --%s: a sweep varies one load kind",
                        rate ? "concurrency" : "request-rate");
        if (cfg->fixed_schedule)
            return fail(st->sweep_flag, "cannot be combined with --fixed-schedule: the trace's timestamps set the "
                                        "load");
        if (rate) {
            cfg->request_rate = cfg->sweep_values[0];
            st->rate_given = true;
        } else {
            cfg->concurrency = (uint32_t)cfg->sweep_values[0];
            st->concurrency_given = true;
        }
    }
    if (st->cooldown_given && !st->sweep_flag && !cfg->search)
        return fail("parameter-sweep-cooldown-seconds", "only applies to a sweep (--concurrency 1,4,16, "
                                                        "--request-rate-range 10:40:10, ...) or a --search");
    if (st->scrape_interval_given && cfg->n_server_metrics_urls == 0)
        return fail("server-metrics-interval", "only applies with --server-metrics-url");
    return finish_multirun(cfg, st);
}

/*
 * --gpu-telemetry [URL ...] (AIPerf's): DCGM exporter endpoints, scraped beside the server's metrics (the same
 * scraper; metrics/srvmetrics.c knows DCGM's names and makes the summary's gpu_telemetry). A URL may leave out
 * http:// and the path (localhost:9400 is http://localhost:9400/metrics); without one, the exporter's default
 * port on this host.
 */
#define GPU_TELEMETRY_DEFAULT_URL "http://localhost:9400/metrics"

static int gpu_telemetry_url(sg_config_t *cfg, const char *opt, const char *arg)
{
    if (strcmp(arg, "pynvml") == 0 || strcmp(arg, "amdsmi") == 0)
        return fail(opt,
                    "%s is not supported: surge reads GPU telemetry from a DCGM exporter's /metrics (give its "
                    "URL, e.g. localhost:9400)",
                    arg);
    char url[1100];
    const char *host = strstr(arg, "://") ? strstr(arg, "://") + 3 : arg;
    snprintf(url, sizeof url, "%s%s%s", strstr(arg, "://") ? "" : "http://", arg, strchr(host, '/') ? "" : "/metrics");
    char h[256], port[8], path[1024], err[512];
    if (strlen(url) >= sizeof url - 1 ||
        sg_scrape_url_parse(url, h, sizeof h, port, sizeof port, path, sizeof path, err, sizeof err) < 0)
        return fail(opt, "%s", strlen(url) >= sizeof url - 1 ? "URL too long" : err);
    for (size_t i = 0; i < cfg->n_server_metrics_urls; i++)
        if (strcmp(cfg->server_metrics_urls[i], url) == 0)
            return 0; /* scraped once */
    if (cfg->n_server_metrics_urls == SG_MAX_SCRAPE_URLS)
        return fail(opt, "at most %d URLs with --server-metrics-url", SG_MAX_SCRAPE_URLS);
    return set_str(&cfg->server_metrics_urls[cfg->n_server_metrics_urls++], url);
}

static int gpu_telemetry(sg_config_t *cfg, parse_state_t *st, const char *opt, const char *arg)
{
    cfg->gpu_telemetry = true;
    if (!arg)
        return 0; /* the default endpoint, unless another --gpu-telemetry names one (finish) */
    st->gpu_url_given = true;
    return gpu_telemetry_url(cfg, opt, arg);
}

/*
 * --measurement-interval MS (perf_analyzer's time windows): the point is measured in windows of MS until the last
 * three agree within --stability-percentage, at most --max-trials windows (engine/stable.c). The windows are the
 * point's --benchmark-duration, cut short once stable, so a count or a duration of its own has no meaning here.
 */
static int finish_stability(sg_config_t *cfg, parse_state_t *st)
{
    if (cfg->measurement_interval_ms <= 0) {
        if (st->stability_flag)
            return fail(st->stability_flag, "only applies with --measurement-interval MS (stability windows)");
        return 0;
    }
    if (st->count_given || st->duration_given)
        return fail("measurement-interval",
                    "cannot be combined with --%s: the point runs in windows of the interval "
                    "until they are stable (at most --max-trials windows)",
                    st->count_given ? "request-count" : "benchmark-duration");
    if (cfg->search)
        return fail("measurement-interval", "cannot be combined with --search: the search sizes its own probes and "
                                            "judges them by confidence intervals (docs/capacity.md)");
    if (cfg->fixed_schedule)
        return fail("measurement-interval", "cannot be combined with --fixed-schedule: the trace sets when the run "
                                            "ends");
    if (cfg->sessions)
        return fail("measurement-interval", "does not apply to multi-turn sessions, whose turns wait on each other "
                                            "across windows");
    cfg->benchmark_duration_s = cfg->measurement_interval_ms * cfg->max_trials / 1e3;
    st->duration_given = true;
    return 0;
}

/* ---------- TLS files ---------- */

/* A TLS file flag: the file must exist, be a regular file and be readable now, so a typo fails before the run. */
static int tls_file(const char *opt, const char *arg, const char *what, char **dst)
{
    if (!*arg)
        return fail(opt, "expected %s, got an empty value", what);
    struct stat sb;
    if (stat(arg, &sb) != 0)
        return fail(opt, "cannot use \"%s\": %s", arg, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return fail(opt, "expected %s, but \"%s\" is not a regular file", what, arg);
    if (access(arg, R_OK) != 0)
        return fail(opt, "cannot read \"%s\": %s", arg, strerror(errno));
    return set_str(dst, arg);
}

/* Each item of a comma-separated list is one of the words in set (NULL-terminated). */
static bool list_within(const char *arg, const char *const *set)
{
    if (!*arg)
        return false;
    for (const char *p = arg;; p++) {
        size_t n = strcspn(p, ",");
        bool found = false;
        for (const char *const *w = set; *w && !found; w++)
            found = strlen(*w) == n && strncmp(*w, p, n) == 0;
        if (!found)
            return false;
        p += n;
        if (!*p)
            return true;
    }
}

/*
 * vLLM's `vllm bench serve` flags that are more than another name of ours (those are aliases in engine/options.c):
 * each accepted where surge does what it means, refused with the flag to use where it does something else.
 */
static int vllm_option(sg_config_t *cfg, parse_state_t *st, int c, const char *opt, const char *arg)
{
    static const char *const metrics[] = {"ttft", "tpot", "itl", "e2el", NULL};
    /* the percentiles every summary holds (metrics/export.c) */
    static const char *const pcts[] = {"1", "5", "10", "25", "50", "75", "90", "95", "99", "99.9", NULL};
    switch (c) {
    case OPT_VLLM_DATASET_NAME:
        if (strcmp(arg, "random") == 0) /* synthetic prompts of --random-input-len tokens: surge's default */
            return 0;
        if (strcmp(arg, "sharegpt") == 0) { /* the file comes with --dataset-path (--input-file) */
            cfg->input_format = SG_INPUT_SHAREGPT;
            st->format_given = true;
            return 0;
        }
        return fail(opt,
                    "vLLM's %s dataset has no counterpart here (surge downloads no datasets): give random "
                    "(synthetic prompts, the default) or sharegpt with --dataset-path FILE; other files go to "
                    "--input-file (formats: docs/workloads.md)",
                    arg);
    case OPT_VLLM_RANGE_RATIO: {
        double r;
        if (parse_num(opt, arg, "a ratio from 0 to 1", 0, false, 1, &r) != 0)
            return SG_EINVAL;
        if (r == 0) /* fixed lengths: surge's default (stddev 0) */
            return 0;
        return fail(opt, "vLLM draws lengths uniformly from [L(1-R), L(1+R)], surge from a normal distribution: give "
                         "--synthetic-input-tokens-stddev and --output-tokens-stddev instead (R x L / sqrt(3) is the "
                         "same spread), or 0 for fixed lengths");
    }
    case OPT_VLLM_SAVE_RESULT: /* surge always writes its summary and per-request files (--export-level) */
        return 0;
    case OPT_VLLM_PERCENTILE_METRICS:
        if (!list_within(arg, metrics))
            return fail(opt,
                        "expected a comma-separated list of ttft, tpot, itl and e2el (surge reports all four, as "
                        "time_to_first_token, inter_token_latency, inter_chunk_latency and request_latency), got "
                        "\"%s\"",
                        arg);
        return 0;
    default: /* OPT_VLLM_METRIC_PERCENTILES */
        if (!list_within(arg, pcts))
            return fail(opt,
                        "surge reports the percentiles 1, 5, 10, 25, 50, 75, 90, 95, 99 and 99.9 of every metric; "
                        "expected a comma-separated list of those, got \"%s\"",
                        arg);
        return 0;
    }
}

/*
 * A typed row of the options table (engine/options.c): its "given" mark set, then its value range-checked into its
 * field. The messages are parse_u32's, parse_u64's and parse_num's, as the hand-written cases had them.
 */
static int typed_option(sg_config_t *cfg, parse_state_t *st, const sg_opt_t *r, const char *opt, const char *arg)
{
    if (r->first && !*(const char **)((char *)st + r->first - 1))
        *(const char **)((char *)st + r->first - 1) = r->name;
    if (r->given)
        *(bool *)((char *)st + r->given - 1) = true;
    if (r->set)
        *(bool *)((char *)cfg + r->set - 1) = true;
    void *field = (char *)cfg + r->field;
    switch (r->type) {
    case SG_OT_FLAG:
        *(bool *)field = true;
        return 0;
    case SG_OT_U32:
        return parse_u32(opt, arg, (uint32_t)r->lo, (uint32_t)r->hi, field);
    case SG_OT_U64:
        return parse_u64(opt, arg, (uint64_t)r->lo, UINT64_MAX, field);
    case SG_OT_NUM:
        return parse_num(opt, arg, r->range, r->lo, r->lo_open, r->hi, field);
    case SG_OT_STR:
        if (!*arg)
            return fail(opt, "%s, got an empty value", r->range);
        return set_str(field, arg);
    case SG_OT_ENUM:
        for (size_t i = 0; r->choices[i]; i++)
            if (strcmp(arg, r->choices[i]) == 0) {
                *(int *)field = r->values[i];
                return 0;
            }
        return fail(opt, "expected %s, got \"%s\"", r->range, arg);
    default:
        return fail(opt, "internal: no parse for this option");
    }
}

/* c as getopt_long returned it; opt the long name the user typed (an alias is named as typed). */
static int one_option(sg_config_t *cfg, parse_state_t *st, int c, const char *opt, const char *arg)
{
    const sg_opt_t *row = sg_opt_by_val(c);
    if (row && row->type != SG_OT_CUSTOM)
        return typed_option(cfg, st, row, opt, arg);
    uint64_t u64;
    switch (c) {
    case OPT_MODEL: {
        if (!*arg)
            return fail(opt, "expected a model name, got an empty value");
        char **m = realloc(cfg->models, (cfg->n_models + 1) * sizeof *m);
        if (!m)
            return oom();
        cfg->models = m;
        if (!(m[cfg->n_models] = strdup(arg)))
            return oom();
        cfg->n_models++;
        return 0;
    }
    case OPT_URL:
        return add_url(cfg, arg);
    case OPT_SERVICE_KIND:
        if (strcmp(arg, "openai") == 0) {
            cfg->triton = false;
            return 0;
        }
        if (strcmp(arg, "triton") == 0) {
            cfg->triton = true;
            return 0;
        }
        return fail(opt, "expected openai or triton (KServe v2 gRPC), got \"%s\"", arg);
    case OPT_BACKEND:
        if (strcmp(arg, "openai") == 0 || strcmp(arg, "openai-chat") == 0) {
            /* vLLM's benchmark backends name an API, which is --endpoint-type here */
            const char *type = arg[6] ? "chat" : "completions";
            if (!quiet_notes)
                fprintf(stderr,
                        "surge: note: --backend %s is vLLM's name for --endpoint-type %s, taken as that; surge's "
                        "--backend is GenAI-Perf's (the Triton model's inputs)\n",
                        arg, type);
            st->endpoint_type = type;
            st->rankings_generic = false;
            return sg_endpoint_parse(type, &cfg->endpoint_type) < 0 ? fail(opt, "internal: no %s endpoint", type) : 0;
        }
        if (sg_kserve_backend_parse(arg, (sg_kserve_backend_t *)&cfg->backend) < 0)
            return fail(opt, "expected tensorrtllm or vllm, got \"%s\"", arg);
        st->backend = arg;
        return 0;
    case OPT_ENDPOINT_TYPE:
        st->endpoint_type = arg;
        if (strcmp(arg, "kserve") == 0)
            cfg->triton = true; /* GenAI-Perf's name for Triton's KServe v2 API */
        else if (sg_endpoint_parse(arg, &cfg->endpoint_type) < 0)
            return fail(opt, "expected one of %s, or kserve; got \"%s\"", sg_endpoint_names(), arg);
        st->rankings_generic = strcmp(arg, "rankings") == 0;
        return 0;
    case OPT_ENDPOINT: {
        const char *e = arg;
        while (*e == '/')
            e++;
        if (!*e)
            return fail(opt, "expected a path such as v1/chat/completions, got \"%s\"", arg);
        for (const unsigned char *p = (const unsigned char *)e; *p; p++)
            if (*p <= ' ' || *p >= 0x7f || *p == '#')
                return fail(opt, "must not contain spaces, '#', control or non-ASCII characters, got \"%s\"", arg);
        return set_str(&st->endpoint, e);
    }
    case OPT_HEADER:
        return add_header(cfg, arg);
    case OPT_API_KEY:
        if (!*arg)
            return fail(opt, "expected a key, got an empty value");
        for (const unsigned char *p = (const unsigned char *)arg; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                return fail(opt, "must not contain CR, LF or other control characters");
        st->api_key = arg;
        return 0;
    case OPT_EXTRA_INPUTS:
        return add_extra_input(st->extra, arg);
    case OPT_REQUEST_RATE:
        if (strchr(arg, ','))
            return parse_sweep_list(cfg, st, opt, SG_SWEEP_RATE, arg);
        st->rate_given = true;
        /* vLLM's inf: every request is due at the start instant */
        if (strcasecmp(arg, "inf") == 0 || strcasecmp(arg, "infinity") == 0) {
            cfg->request_rate = INFINITY;
            return 0;
        }
        return parse_num(opt, arg, "a positive number, or inf (every request due at the start)", 0, true, 1e9,
                         &cfg->request_rate);
    case OPT_CONCURRENCY:
        if (strchr(arg, ','))
            return parse_sweep_list(cfg, st, opt, SG_SWEEP_CONCURRENCY, arg);
        st->concurrency_given = true;
        return parse_u32(opt, arg, 1, MAX_CONCURRENCY, &cfg->concurrency);
    case OPT_CONCURRENCY_RANGE:
        return parse_sweep_range(cfg, st, opt, SG_SWEEP_CONCURRENCY, arg);
    case OPT_RATE_RANGE:
        return parse_sweep_range(cfg, st, opt, SG_SWEEP_RATE, arg);
    case OPT_STALL_THRESHOLD:
        if (parse_num(opt, arg, "milliseconds, 1 or more (0: not watched)", 0, false, 3600e3,
                      &cfg->stall_threshold_ms) != 0)
            return SG_EINVAL;
        if (cfg->stall_threshold_ms > 0 && cfg->stall_threshold_ms < 1)
            return fail(opt, "expected milliseconds, 1 or more (0: not watched), got %s", arg);
        return 0;
    case OPT_CONFIDENCE_LEVEL: /* of a multi-run's intervals and of every --slo verdict's */
        if (parse_num(opt, arg, "a confidence level between 0 and 1 (exclusive), such as 0.90, 0.95 or 0.99", 0, true,
                      1, &cfg->confidence_level) != 0)
            return SG_EINVAL;
        if (cfg->confidence_level >= 1)
            return fail(opt,
                        "expected a confidence level between 0 and 1 (exclusive), such as 0.90, 0.95 or 0.99, "
                        "got %s",
                        arg);
        return 0;
    case OPT_WARMUP_FIRST_ONLY:
    case OPT_NO_WARMUP_FIRST_ONLY:
        if (!st->multirun_flag)
            st->multirun_flag = opt;
        if (arg && strcmp(arg, "true") != 0 && strcmp(arg, "false") != 0)
            return fail(opt, "takes no value (or true/false), got \"%s\"", arg);
        cfg->warmup_only_first_run = c == OPT_WARMUP_FIRST_ONLY && (!arg || strcmp(arg, "true") == 0);
        return 0;
    case OPT_CONSISTENT_SEED:
    case OPT_NO_CONSISTENT_SEED:
        if (arg && strcmp(arg, "true") != 0 && strcmp(arg, "false") != 0)
            return fail(opt, "takes no value (or true/false), got \"%s\"", arg);
        if (c == OPT_NO_CONSISTENT_SEED || (arg && strcmp(arg, "false") == 0))
            return fail(opt, "surge always seeds its workload (--random-seed, default 0), so every run sends the "
                             "same prompts on the same schedule; for a different workload per invocation, give "
                             "each its own --random-seed");
        return 0;
    case OPT_SERVER_METRICS_URL: {
        char host[256], port[8], path[1024], err[512];
        if (cfg->n_server_metrics_urls == SG_MAX_SCRAPE_URLS)
            return fail(opt, "at most %d URLs", SG_MAX_SCRAPE_URLS);
        if (sg_scrape_url_parse(arg, host, sizeof host, port, sizeof port, path, sizeof path, err, sizeof err) < 0)
            return fail(opt, "%s", err);
        return set_str(&cfg->server_metrics_urls[cfg->n_server_metrics_urls++], arg);
    }
    case OPT_BURSTINESS:
        st->burstiness_flag = opt;
        return parse_num(opt, arg, "a positive number (1: Poisson; below 1 burstier, above 1 smoother)", 0, true, 1e6,
                         &cfg->burstiness);
    case OPT_SLO: {
        if (cfg->n_slo_checks >= SG_SLO_MAX)
            return fail(opt, "at most %d SLOs", SG_SLO_MAX);
        char err[640];
        sg_slo_check_t *chk = &cfg->slo_checks[cfg->n_slo_checks];
        if (sg_slo_parse(arg, chk, err, sizeof err) != 0)
            return fail(opt, "%s", err);
        for (size_t i = 0; i < cfg->n_slo_checks; i++)
            if (strcmp(cfg->slo_checks[i].text, chk->text) == 0)
                return fail(opt, "%s is given twice", chk->text);
        cfg->n_slo_checks++;
        return 0;
    }
    case OPT_SEARCH_RANGE:
        st->search_range_given = true;
        return parse_search_range(cfg, opt, arg);
    case OPT_LOCAL_ADDRESS: {
        /* the syntax now; whether each address is this host's is the start-up check's (run.c) */
        sg_addr_t *v;
        size_t nv;
        char why[256];
        if (sg_tcp_local_parse(arg, &v, &nv, why, sizeof why) < 0)
            return fail(opt, "%s (in \"%s\")", why, arg);
        free(v);
        return set_str(&cfg->local_address, arg);
    }
    case OPT_GRACE:
        st->grace_given = true;
        if (strcmp(arg, "inf") == 0) { /* AIPerf's spelling of "wait for every request" */
            cfg->benchmark_grace_s = -1;
            return 0;
        }
        return parse_num(opt, arg, "a number of seconds (0 or more) or inf", 0, false, 1e9, &cfg->benchmark_grace_s);
    case OPT_WORKERS:
        if (parse_u64(opt, arg, 1, MAX_WORKERS, &u64) != 0)
            return SG_EINVAL;
        cfg->workers = (unsigned)u64;
        return 0;
    case OPT_MEDIA: {
        char err[256];
        return sg_media_option(&cfg->media, opt, arg, err, sizeof err) < 0 ? fail(NULL, "%s", err) : 0;
    }
    case OPT_CACHE_BUST:
        if (strcmp(arg, "first_turn_prefix") != 0 && strcmp(arg, "none") != 0)
            return fail(opt,
                        "expected first_turn_prefix (each request's prompt starts with words of its own) or "
                        "none (prompts repeat in turn), not \"%s\"; AIPerf's system_* and *_suffix targets "
                        "have no surge counterpart",
                        arg);
        st->cache_bust = arg;
        return 0;
    case OPT_INPUT_FORMAT: {
        sg_input_format_t f;
        if (sg_input_format_parse(arg, &f) != 0)
            return fail(opt, "expected one of auto, %s, got \"%s\"", sg_input_format_list(), arg);
        st->format_given = f != SG_INPUT_AUTO;
        cfg->input_format = (int)f;
        return 0;
    }
    case OPT_OSL_MEAN:
        st->osl_given = true;
        if (strcmp(arg, "-1") == 0) {
            cfg->osl_mean = -1;
            return 0;
        }
        errno = 0;
        char *end;
        unsigned long long v = strtoull(arg, &end, 10);
        if (!isdigit((unsigned char)arg[0]) || *end || errno || v < 1 || v > INT32_MAX)
            return fail(opt, "expected a whole number from 1 to %d, or -1 to leave max_tokens out, got \"%s\"",
                        INT32_MAX, arg);
        u64 = v;
        cfg->osl_mean = (int32_t)u64;
        return 0;
    case OPT_IGNORE_EOS:
        st->ignore_eos = true;
        return 0;
    case OPT_EXPORT_FILE:
        if (!*arg || strcmp(arg, ".") == 0 || strcmp(arg, "..") == 0)
            return fail(opt, "expected a file name such as profile_export.json, got \"%s\"", arg);
        if (strchr(arg, '/'))
            return fail(opt,
                        "expected a file name without a directory (use --artifact-dir for where it goes), "
                        "got \"%s\"",
                        arg);
        return set_str(&cfg->profile_export_file, arg);
    case OPT_GENERATE_PLOTS:
        /* GenAI-Perf's flag takes no value; a "true"/"false" is accepted for scripts that pass one */
        if (arg && strcmp(arg, "true") != 0 && strcmp(arg, "false") != 0)
            return fail(opt, "takes no value (or true/false), got \"%s\"", arg);
        cfg->generate_plots = !arg || strcmp(arg, "true") == 0;
        return 0;
    case OPT_WORLD_SIZE:
        if (parse_u64(opt, arg, 1, 1024, &u64) != 0)
            return SG_EINVAL;
        cfg->world_size = (uint32_t)u64;
        return 0;
    case OPT_RANK:
        if (parse_u64(opt, arg, 0, 1023, &u64) != 0)
            return SG_EINVAL;
        cfg->rank = (int32_t)u64;
        return 0;
    case OPT_COORDINATOR:
        if (!*arg)
            return fail(opt, "expected HOST:PORT (rank 0's host name or address, and a port)");
        return set_str(&cfg->coordinator, arg);
    case OPT_EXPORT_LEVEL:
        /* AIPerf's levels: summary (aggregates only), records (+ per-request JSONL), raw (+ bodies) */
        if (strcmp(arg, "summary") == 0 || strcmp(arg, "records") == 0) {
            cfg->export_summary = arg[0] == 's';
            return 0;
        }
        if (strcmp(arg, "raw") == 0)
            return fail(opt, "raw (AIPerf's full request and response bodies) is not kept by surge: give records "
                             "(the default) or summary");
        return fail(opt, "expected summary or records, got \"%s\"", arg);
    case OPT_IO_BACKEND:
        if ((cfg->io_backend = sg_io_backend_parse(arg)) < 0)
            return fail(opt, "expected auto, io_uring or epoll, got \"%s\"", arg);
        return 0;
    case OPT_TIMESTAMPS:
        if (strcmp(arg, "kernel") != 0 && strcmp(arg, "user") != 0)
            return fail(opt, "expected kernel or user, got \"%s\"", arg);
        cfg->user_timestamps = strcmp(arg, "user") == 0;
        return 0;
    case OPT_COALESCE_US:
        if (strcmp(arg, "auto") == 0) {
            cfg->coalesce_us = SG_COALESCE_AUTO;
            return 0;
        }
        if (!isdigit((unsigned char)arg[0]))
            return fail(opt, "expected auto or microseconds from 0 to %u, got \"%s\"", SG_COALESCE_US_MAX, arg);
        return parse_u32(opt, arg, 0, SG_COALESCE_US_MAX, &cfg->coalesce_us);
    case OPT_RAMP_END_RPS:
        return parse_num(opt, arg, "requests/s, above 0", 0, true, MAX_RATE, &st->ramp_end);
    case OPT_GOODPUT:
        return parse_goodput(cfg, arg);
    case OPT_CACERT:
        return tls_file(opt, arg, "a PEM file of CA certificates", &cfg->cacert);
    case OPT_CERT:
        return tls_file(opt, arg, "a PEM client certificate file", &cfg->client_cert);
    case OPT_KEY:
        return tls_file(opt, arg, "a PEM private key file", &cfg->client_key);
    case OPT_CONFIG: /* taken out of argv by sg_cfgfile_expand before the parse; a file cannot name another */
        return fail(opt, "a config file cannot name another config file");
    case OPT_VLLM_DATASET_NAME:
    case OPT_VLLM_RANGE_RATIO:
    case OPT_VLLM_SAVE_RESULT:
    case OPT_VLLM_PERCENTILE_METRICS:
    case OPT_VLLM_METRIC_PERCENTILES:
        return vllm_option(cfg, st, c, opt, arg);
    case OPT_PROGRESS:
        cfg->progress = 1;
        return 0;
    case OPT_GPU_TELEMETRY:
        return gpu_telemetry(cfg, st, opt, arg);
    case OPT_NO_PROGRESS:
        cfg->progress = 0;
        return 0;
    default:
        return not_supported(c);
    }
}

static int set_defaults(sg_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model_strategy = SG_MODEL_ROUND_ROBIN;
    cfg->endpoint_type = SG_OAI_CHAT;
    cfg->batch_size = 1;
    cfg->distribution = SG_DIST_POISSON;
    cfg->burstiness = 1;
    cfg->request_timeout_s = 600;
    cfg->stall_threshold_ms = 100;
    cfg->benchmark_grace_s = -1;
    cfg->workers = usable_cpus();
    cfg->coalesce_us = SG_COALESCE_AUTO;
    cfg->isl_mean = 550;
    cfg->num_prompts = 100;
    sg_media_defaults(&cfg->media);
    cfg->osl_mean = -1;
    cfg->prefix_len = DEFAULT_PREFIX_LEN;
    cfg->block_size = DEFAULT_BLOCK_SIZE;
    cfg->fixed_schedule_speedup = 1;
    cfg->conversation_num = 100; /* AIPerf's default dataset size */
    cfg->turn_mean = 1;
    cfg->turn_delay_ratio = 1;
    cfg->progress = -1;
    cfg->cooldown_s = 1;
    cfg->server_metrics_interval_s = 1;
    cfg->rank = -1;
    cfg->coordinator_timeout_s = 120;
    cfg->search_lo = 1;
    cfg->search_precision = 0.05;
    cfg->search_trials = 1;
    cfg->search_max_trials = 4;
    cfg->num_profile_runs = 1;
    cfg->stability_pct = 10; /* perf_analyzer's defaults */
    cfg->max_trials = 10;
    cfg->confidence_level = 0.95;
    cfg->warmup_only_first_run = true;
    cfg->headers = calloc(1, sizeof *cfg->headers);
    cfg->profile_export_file = strdup(DEFAULT_EXPORT_FILE);
    if (!cfg->headers || !cfg->profile_export_file)
        return oom();
    /* the default I/O backend may come from the environment (a container image, CI's epoll pass) */
    const char *be = getenv("SURGE_IO_BACKEND");
    if (be && *be) {
        int b = sg_io_backend_parse(be);
        if (b < 0) {
            fprintf(stderr, "surge: SURGE_IO_BACKEND=%s: expected auto, io_uring or epoll\n", be);
            return SG_EINVAL;
        }
        cfg->io_backend = b;
    }
    return 0;
}

int sg_config_check_sessions(const sg_config_t *cfg)
{
    if (!cfg->sessions)
        return 0;
    if (cfg->triton)
        return fail("service-kind", "triton takes no multi-turn sessions: they need a chat-like OpenAI API (chat, "
                                    "responses, messages; completions and generate join the history)");
    if (sg_endpoint(cfg->endpoint_type)->batch)
        return fail("endpoint-type",
                    "%s takes no multi-turn sessions (nothing is generated to carry into the next "
                    "turn)",
                    sg_endpoint(cfg->endpoint_type)->name);
    if (cfg->fixed_schedule && !cfg->input_file)
        return fail("fixed-schedule", "replays the sessions of a multi_turn file (--input-file, a \"timestamp\" on "
                                      "each session's first turn); synthetic sessions have no timestamps");
    if (cfg->num_prefix)
        return fail("num-prefix-prompts", "does not apply to multi-turn sessions: a turn's history is its prefix");
    if (cfg->input_file && cfg->input_format != SG_INPUT_MULTI_TURN && cfg->input_format != SG_INPUT_AUTO)
        return fail("conversation-turn-mean", "makes synthetic sessions; with --input-file give a multi_turn file "
                                              "(--input-format multi_turn)");
    return 0;
}

/* The workload flags that depend on one another: input file, prefixes, fixed schedule. */
static int finish_workload(sg_config_t *cfg, parse_state_t *st)
{
    if (cfg->input_file) {
        if (st->isl_given)
            return fail("synthetic-input-tokens-mean", "sets synthetic prompt lengths; with --input-file the prompts "
                                                       "come from the file");
        if (st->num_prompts_given)
            return fail("num-prompts", "sets how many synthetic prompts to make; with --input-file every entry of "
                                       "the file is used, in file order");
        if (cfg->num_prefix)
            return fail("num-prefix-prompts", "applies to synthetic prompts, not with --input-file");
    } else {
        if (st->format_given)
            return fail("input-format", "only applies with --input-file");
        if (cfg->fixed_schedule)
            return fail("fixed-schedule", "needs a trace: --input-file trace.jsonl (mooncake_trace: \"timestamp\" "
                                          "in ms, \"input_length\", \"output_length\", \"hash_ids\")");
        if (st->block_given)
            return fail("isl-block-size", "only applies to a trace's hash_ids (--input-file)");
    }
    if (st->prefix_len_given && !cfg->num_prefix)
        return fail("prefix-prompt-length", "has no effect without --num-prefix-prompts K (how many distinct "
                                            "prefixes)");
    if (st->speedup_given && !cfg->fixed_schedule)
        return fail("fixed-schedule-speedup", "only applies with --fixed-schedule");
    if (cfg->fixed_schedule) {
        if (st->format_given && cfg->input_format != SG_INPUT_MOONCAKE && cfg->input_format != SG_INPUT_MULTI_TURN)
            return fail("fixed-schedule",
                        "needs a mooncake_trace file (entries with \"timestamp\") or multi_turn sessions, not "
                        "--input-format %s",
                        sg_input_format_name((sg_input_format_t)cfg->input_format));
        const char *clash = st->rate_given           ? "request-rate"
                            : st->concurrency_given  ? "concurrency"
                            : st->distribution_given ? "request-distribution"
                            : st->count_given        ? "request-count"
                            : st->duration_given     ? "benchmark-duration"
                            : st->warmup_given       ? "warmup-request-count"
                                                     : NULL;
        if (clash)
            return fail(clash, "cannot be combined with --fixed-schedule: the trace's timestamps decide when each "
                               "request goes out, and every entry is sent once (use --fixed-schedule-speedup to "
                               "replay faster or slower)");
    }
    return 0;
}

/*
 * --cache-bust: each request's own words at the start of its prompt, so a server's prefix cache serves none of it
 * from an earlier request. On by default for synthetic prompts; off where the run asks for reuse, which it then
 * keeps as it is: --num-prompts given, shared prefixes, an input file, multi-turn sessions (their history), and
 * embeddings and rankings (several texts a request). first_turn_prefix given where it cannot apply is an error.
 */
static int finish_cache_bust(sg_config_t *cfg, const parse_state_t *st)
{
    const char *why = NULL;
    if (st->cache_bust && strcmp(st->cache_bust, "none") == 0)
        why = "--cache-bust none";
    else if (cfg->input_file)
        why = "--input-file";
    else if (cfg->sessions)
        why = "multi-turn sessions";
    else if (cfg->num_prefix)
        why = "--num-prefix-prompts";
    else if (!cfg->triton && sg_endpoint(cfg->endpoint_type)->batch)
        why = "embeddings and rankings";
    else if (!cfg->triton && cfg->endpoint_type == SG_OAI_IMAGE_RETRIEVAL)
        why = "image_retrieval (images only, no text)";
    else if (st->num_prompts_given && !st->cache_bust)
        why = "--num-prompts";
    if (st->cache_bust && why && strcmp(why, "--cache-bust none") != 0 && strcmp(why, "--num-prompts") != 0)
        return fail("cache-bust",
                    "first_turn_prefix applies to synthetic prompts of one text a request; not with %s, "
                    "whose prompts are shared on purpose",
                    why);
    cfg->cache_bust = why == NULL;
    cfg->cache_bust_off_reason = why;
    cfg->cache_bust_given = st->cache_bust != NULL;
    return 0;
}

/*
 * --service-kind triton: KServe v2 gRPC over HTTP/2 (h2c with prior knowledge on http://). The RPC path is
 * fixed by the service, so --endpoint and a base path in the URL have no meaning; --endpoint-type may only say
 * kserve. Every --extra-inputs value must make a one-element tensor (see docs/cli.md for the types).
 */
static int finish_triton(sg_config_t *cfg, parse_state_t *st)
{
    cfg->http2 = true;
    if (st->endpoint_type && strcmp(st->endpoint_type, "kserve") != 0)
        return fail("endpoint-type",
                    "%s is an OpenAI API; --service-kind triton speaks KServe v2 gRPC (leave "
                    "--endpoint-type out, or say kserve)",
                    st->endpoint_type);
    if (st->endpoint)
        return fail("endpoint", "does not apply to --service-kind triton: the gRPC method path is fixed "
                                "(/inference.GRPCInferenceService/ModelInfer or ModelStreamInfer)");
    if (cfg->base_path && cfg->base_path[0])
        return fail("url", "a gRPC server is addressed as host:port; drop the path \"%s\" from %s", cfg->base_path,
                    cfg->url);
    const char *key;
    json_t *v;
    json_object_foreach(st->extra, key, v)
    {
        if (!*key)
            return fail("extra-inputs", "an input tensor needs a name");
        if (!json_is_boolean(v) && !json_is_integer(v) && !json_is_real(v) && !json_is_string(v))
            return fail("extra-inputs",
                        "%s: a Triton input tensor takes one value (true/false, an integer, a "
                        "number or a string), not %s",
                        key,
                        json_is_array(v)    ? "an array"
                        : json_is_object(v) ? "an object"
                                            : "null");
    }
    return 0;
}

/*
 * vLLM's --ignore-eos: "ignore_eos": true in every body, as --extra-inputs ignore_eos:true would put it. An
 * --extra-inputs that says otherwise is a contradiction, not an override. Triton's KServe models take their own
 * inputs (TensorRT-LLM has no such tensor; vLLM's takes it in sampling_parameters): refused there.
 */
static int finish_ignore_eos(sg_config_t *cfg, parse_state_t *st)
{
    if (!st->ignore_eos)
        return 0;
    if (cfg->triton)
        return fail("ignore-eos", "applies to OpenAI bodies; with --service-kind triton give the model's own input "
                                  "with --extra-inputs");
    json_t *v = json_object_get(st->extra, "ignore_eos");
    if (v && !json_is_true(v))
        return fail("ignore-eos", "contradicts --extra-inputs ignore_eos (keep one of them)");
    return json_object_set_new(st->extra, "ignore_eos", json_true()) == 0 ? 0 : oom();
}

/*
 * AIPerf's --rankings-* flags: synthetic rankings only. A part not given takes what the other flags say:
 * --batch-size passages, the synthetic prompts' ISL mean and stddev for the query and for each passage.
 */
static int finish_rankings(sg_config_t *cfg, const parse_state_t *st, const sg_endpoint_t *ep)
{
    sg_rankings_synth_t *r = &cfg->rankings;
    if (!st->rankings_flag)
        return 0;
    bool rankings = cfg->endpoint_type == SG_OAI_RANK_NIM || cfg->endpoint_type == SG_OAI_RANK_TEI ||
                    cfg->endpoint_type == SG_OAI_RANK_COHERE;
    if (!rankings || cfg->triton)
        return fail(st->rankings_flag,
                    "applies to the rankings endpoint types (rankings, nim_rankings, hf_tei_rankings, "
                    "cohere_rankings), not to %s",
                    cfg->triton ? "kserve" : ep->name);
    if (cfg->input_file)
        return fail(st->rankings_flag, "shapes synthetic rankings; --input-file gives its own query and passages");
    if (r->passages_mean && st->batch_given)
        return fail("rankings-passages-mean", "is --batch-size for rankings: give one of them");
    r->on = true;
    if (!r->passages_mean)
        r->passages_mean = cfg->batch_size;
    if (!r->query_mean)
        r->query_mean = cfg->isl_mean;
    if (!r->query_stddev_given)
        r->query_stddev = cfg->isl_stddev;
    if (!r->passage_mean)
        r->passage_mean = cfg->isl_mean;
    if (!r->passage_stddev_given)
        r->passage_stddev = cfg->isl_stddev;
    return 0;
}

/*
 * What the endpoint type decides: GenAI-Perf's rankings:tei extra input (taken out of the bodies: it says which
 * shape, it is not an input), which flags apply, and the Messages API's headers (its key goes in x-api-key).
 */
static int finish_endpoint(sg_config_t *cfg, parse_state_t *st)
{
    json_t *shape = json_object_get(st->extra, "rankings");
    if (shape && st->rankings_generic) {
        if (!json_is_string(shape) ||
            (strcmp(json_string_value(shape), "tei") != 0 && strcmp(json_string_value(shape), "nim") != 0))
            return fail("extra-inputs", "rankings takes tei or nim (the shape of --endpoint-type rankings)");
        if (strcmp(json_string_value(shape), "tei") == 0)
            cfg->endpoint_type = SG_OAI_RANK_TEI;
        json_object_del(st->extra, "rankings");
    }
    const sg_endpoint_t *ep = sg_endpoint(cfg->endpoint_type);
    if (cfg->streaming && !ep->streams)
        return fail("streaming", "%s responses are never streamed: leave --streaming out", ep->name);
    if (cfg->batch_size > 1 && !ep->batch)
        return fail("batch-size",
                    "applies to embeddings (inputs per request) and rankings (passages per query), not to %s",
                    ep->name);
    if (st->osl_given && !ep->output)
        return fail("output-tokens-mean", "%s responses generate no tokens: leave it out", ep->name);
    if (finish_rankings(cfg, st, ep) != 0)
        return SG_EINVAL;
    if (cfg->endpoint_type == SG_OAI_MESSAGES) {
        if (!has_header(cfg, "anthropic-version")) {
            char *line = strdup("anthropic-version: 2023-06-01");
            int rc = line ? push_header(cfg, line) : oom();
            if (rc)
                return rc;
        }
        if (st->api_key) {
            if (has_header(cfg, "x-api-key"))
                return fail("api-key", "an x-api-key header is also given with -H; keep one of them");
            size_t len = strlen("x-api-key: ") + strlen(st->api_key) + 1;
            char *line = malloc(len);
            if (!line)
                return oom();
            snprintf(line, len, "x-api-key: %s", st->api_key);
            int rc = push_header(cfg, line);
            if (rc)
                return rc;
            st->api_key = NULL; /* not also as a bearer token */
        }
    }
    return 0;
}

/* Everything that depends on more than one flag, once all are in. */
static int finish(sg_config_t *cfg, parse_state_t *st)
{
    int rc;
    if (cfg->triton) {
        rc = finish_triton(cfg, st);
        if (rc)
            return rc;
    } else if (st->backend) {
        if (strcmp(st->backend, "vllm") == 0) /* vLLM's benchmark default: its OpenAI completions API */
            return fail("backend", "vllm is GenAI-Perf's Triton backend here (with --service-kind triton); vLLM's "
                                   "benchmark --backend vllm (its OpenAI completions API) is --endpoint-type "
                                   "completions");
        return fail("backend", "only applies to --service-kind triton");
    }
    if (cfg->export_summary && cfg->generate_plots)
        return fail("export-level", "summary writes no per-request file, and --generate-plots draws from it: give "
                                    "one or the other");
    if (cfg->n_models == 0)
        return fail("model", "required: name the model to benchmark, e.g. -m meta-llama/Llama-3.1-8B-Instruct");
    if (cfg->gpu_telemetry && !st->gpu_url_given &&
        (rc = gpu_telemetry_url(cfg, "gpu-telemetry", GPU_TELEMETRY_DEFAULT_URL)) != 0)
        return rc;
    rc = finish_points(cfg, st);
    if (rc)
        return rc;
    rc = finish_ramp_cancel(cfg, st);
    if (rc)
        return rc;
    if (st->rate_given && st->concurrency_given)
        return fail("concurrency", "cannot be combined with --request-rate: choose a closed loop (--concurrency) "
                                   "or an open loop (--request-rate, optionally with --max-concurrency)");
    if (st->max_concurrency_given && !st->rate_given && !cfg->fixed_schedule)
        return fail("max-concurrency", "only applies with --request-rate or --fixed-schedule; for a closed loop use "
                                       "--concurrency (vLLM's --max-concurrency N without a rate is --concurrency "
                                       "N here)");
    if (st->num_prompts_given && !st->count_given && !st->duration_given)
        fprintf(stderr, "surge: note: --num-prompts is the number of distinct prompts here (AIPerf's meaning); "
                        "vLLM's --num-prompts, the number of requests, is --request-count\n");
    if (st->burstiness_flag) {
        /* vLLM's --burstiness means gamma arrivals (1 is Poisson); with another distribution named, it is a mistake */
        if (st->distribution_given && cfg->distribution != SG_DIST_GAMMA)
            return fail(st->burstiness_flag,
                        "shapes gamma arrivals; --request-distribution %s has no shape (use "
                        "--request-distribution gamma, or leave it out)",
                        cfg->distribution == SG_DIST_CONSTANT ? "constant" : "poisson");
        cfg->distribution = SG_DIST_GAMMA;
        st->distribution_given = true;
        if (!st->rate_given && cfg->search != SG_SEARCH_MAX_RATE)
            return fail(st->burstiness_flag, "only applies with --request-rate (open-loop arrivals)");
    }
    if (st->distribution_given && !st->rate_given)
        return fail("request-distribution", "only applies with --request-rate");
    rc = finish_workload(cfg, st);
    if (rc)
        return rc;
    if (cfg->tool_choice && !cfg->tools_file && !cfg->input_file)
        return fail("tool-choice", "applies to requests that carry tools: give --tools FILE (or an --input-file whose "
                                   "lines carry \"tools\")");
    if (cfg->tools_file || cfg->tool_choice) {
        /* the file is read and checked here, so a bad one stops the run before anything is sent */
        char terr[512];
        if (sg_tools_config(cfg->tools_file, cfg->tool_choice, cfg->triton ? -1 : (int)cfg->endpoint_type,
                            &cfg->tools_json, terr, sizeof terr) < 0)
            return fail(NULL, "%s", terr);
    }
    /* multi-turn sessions: synthetic with more than one turn, or a multi_turn file (auto-detected ones are checked
     * again once read) */
    cfg->sessions = cfg->turn_mean > 1 || (cfg->input_file && cfg->input_format == SG_INPUT_MULTI_TURN);
    if (st->conv_given && !cfg->sessions)
        return fail("conversation-turn-mean", "the --conversation-* flags shape multi-turn sessions, which need a "
                                              "mean above 1 turn (or a multi_turn --input-file)");
    if (cfg->sessions && cfg->turn_mean > 1 && cfg->input_file)
        return fail("conversation-turn-mean", "makes synthetic sessions; with --input-file the file's sessions are "
                                              "played (give a multi_turn file and leave this out)");
    if (!cfg->client_cert != !cfg->client_key)
        return fail(cfg->client_cert ? "cert" : "key", "needs its partner: give both --cert FILE and --key FILE");
    if (!st->rate_given && !st->concurrency_given && !cfg->fixed_schedule)
        cfg->concurrency = 1;
    if (st->rate_given)
        cfg->concurrency = 0;
    rc = finish_stability(cfg, st);
    if (rc)
        return rc;
    if (st->grace_given && !st->duration_given)
        return fail("benchmark-grace-period", "bounds the wait after --benchmark-duration's sending, so it needs "
                                              "--benchmark-duration S");
    if (!st->count_given && !st->duration_given && !cfg->fixed_schedule)
        cfg->request_count = DEFAULT_REQUEST_COUNT; /* a fixed schedule: the number of entries, once read */
    if (isinf(cfg->request_rate)) {
        /* every request is due at the start instant: only a count bounds how many are issued */
        if (!st->count_given && st->duration_given)
            return fail("request-rate", "inf makes every request due at the start, so it needs a count: give "
                                        "--request-count N (--benchmark-duration alone would issue without end)");
        /* --burstiness sets distribution_given too: name the flag the user typed */
        if (st->distribution_given)
            return fail(st->burstiness_flag ? st->burstiness_flag : "request-distribution",
                        "has no effect with --request-rate inf (there are no gaps between arrivals to distribute)");
    }
    rc = finish_ignore_eos(cfg, st);
    if (rc)
        return rc;
    if (!cfg->triton) {
        rc = finish_endpoint(cfg, st);
        if (rc)
            return rc;
    }
    rc = sg_config_check_sessions(cfg);
    if (rc)
        return rc;
    rc = sg_config_check_media(cfg);
    if (rc)
        return rc;
    rc = finish_cache_bust(cfg, st);
    if (rc)
        return rc;

    if (!cfg->url) {
        rc = parse_url(cfg, cfg->triton ? DEFAULT_TRITON_URL : DEFAULT_URL);
        if (rc)
            return rc;
    }
    /* The OpenAI SDK's base URL ends in /v1 (http://host:8000/v1): the API's paths then follow it directly. */
    size_t blen = strlen(cfg->base_path);
    bool v1_base = blen >= 3 && strcmp(cfg->base_path + blen - 3, "/v1") == 0;
    const sg_endpoint_t *ep = sg_endpoint(cfg->endpoint_type);
    const char *endpoint = st->endpoint ? st->endpoint : cfg->streaming && ep->stream_path ? ep->stream_path : ep->path;
    if (!st->endpoint && v1_base && strncmp(endpoint, "v1/", 3) == 0)
        endpoint += 3;
    cfg->endpoint_given = st->endpoint != NULL;
    size_t plen = strlen(cfg->base_path) + 1 + strlen(endpoint) + 1;
    if (!(cfg->endpoint_path = malloc(plen)))
        return oom();
    snprintf(cfg->endpoint_path, plen, "%s/%s", cfg->base_path, endpoint);

    if (st->api_key) {
        if (has_header(cfg, "Authorization"))
            return fail("api-key", "an Authorization header is also given with -H; keep one of them");
        size_t len = strlen("Authorization: Bearer ") + strlen(st->api_key) + 1;
        char *line = malloc(len);
        if (!line)
            return oom();
        snprintf(line, len, "Authorization: Bearer %s", st->api_key);
        rc = push_header(cfg, line);
        if (rc)
            return rc;
    }

    if (!(cfg->extra_inputs_json = json_dumps(st->extra, JSON_COMPACT)))
        return oom();

    /* GenAI-Perf derives its file names from Path(profile_export_file).stem */
    const char *f = cfg->profile_export_file;
    const char *dot = strrchr(f, '.');
    size_t stem_len = (dot && dot != f) ? (size_t)(dot - f) : strlen(f);
    if (!(cfg->profile_export_stem = strndup(f, stem_len)))
        return oom();

    if (!st->artifact_dir_given) {
        char *name = sg_config_run_name(cfg);
        if (!name)
            return oom();
        size_t len = strlen("artifacts/") + strlen(name) + 1;
        cfg->artifact_dir = malloc(len);
        if (cfg->artifact_dir)
            snprintf(cfg->artifact_dir, len, "artifacts/%s", name);
        free(name);
        if (!cfg->artifact_dir)
            return oom();
    }
    return 0;
}

/* GenAI-Perf hands everything after "--" to perf_analyzer; say plainly that there is none here. */
static int reject_passthrough(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            if (i + 1 < argc)
                return fail(NULL,
                            "arguments after -- (\"%s\" ...) are passed to perf_analyzer by GenAI-Perf; "
                            "surge has no perf_analyzer behind it: use surge's own flags (surge profile "
                            "--help)",
                            argv[i + 1]);
            return 0;
        }
        if (takes_next_arg(argv[i]))
            i++;
    }
    return 0;
}

static int parse_argv(sg_config_t *cfg, parse_state_t *st, int argc, char **argv)
{
    int rc = reject_passthrough(argc, argv);
    if (rc)
        return rc;
    const char *short_options;
    const struct option *long_options = sg_opt_getopt(&short_options);
    /* full names only: getopt_long would take --isl for --isl-block-size */
    if (sg_opts_check("surge", "surge profile --help", argc, argv, short_options, long_options) < 0)
        return SG_EINVAL;
    /* optind = 0 makes glibc reinitialise getopt completely, so parsing twice in one process works (tests) */
    optind = 0;
    opterr = 0;
    int c, idx = -1;
    while ((c = getopt_long(argc, argv, short_options, long_options, &idx)) != -1) {
        if (c == OPT_HELP) {
            sg_config_usage(stdout);
            return 1;
        }
        if (c == OPT_VERSION) {
            cfg->show_version = true;
            return 1;
        }
        if (c == ':')
            return fail(opt_name(optopt), "expects a value");
        if (c == '?') {
            const char *bad = (optind > 0 && optind <= argc) ? argv[optind - 1] : "?";
            if (optopt && strncmp(bad, "--", 2) == 0)
                return fail(opt_name(optopt), "takes no value, got \"%s\"", bad);
            if (optopt)
                return fail(NULL, "unknown option -%c (see surge profile --help)", optopt);
            return fail(NULL, "unknown or ambiguous option \"%s\" (see surge profile --help)", bad);
        }
        /* a word made from a config file names its file and line in any complaint about it */
        fail_where = optind > 0 && optind <= argc ? sg_cfgfile_where(argv[optind - 1]) : NULL;
        /* AIPerf's booleans take their value as the next word too (--profile-run-disable-warmup-after-first false) */
        const char *arg = optarg;
        if ((c == OPT_WARMUP_FIRST_ONLY || c == OPT_CONSISTENT_SEED) && !arg && optind < argc &&
            (strcmp(argv[optind], "true") == 0 || strcmp(argv[optind], "false") == 0))
            arg = argv[optind++];
        /* AIPerf's --gpu-telemetry takes its URLs as the next words: every one up to the next flag */
        if (c == OPT_GPU_TELEMETRY && !arg && optind < argc && argv[optind][0] != '-') {
            while (optind < argc && argv[optind][0] != '-')
                if ((rc = one_option(cfg, st, c, "gpu-telemetry", argv[optind++])) != 0)
                    return rc;
            idx = -1;
            continue;
        }
        /* idx is set for a long option only: a short one is named by its long form */
        rc = one_option(cfg, st, c, idx >= 0 ? long_options[idx].name : opt_name(c), arg);
        idx = -1;
        fail_where = NULL;
        if (rc)
            return rc;
    }
    /*
     * `surge profile` takes no positional arguments. vLLM's --goodput takes several words unquoted
     * (--goodput ttft:200 e2el:1000): accept such leftovers as more SLOs when --goodput was given.
     */
    for (int i = optind; i < argc; i++) {
        sg_metric_id_t id;
        const char *colon = strchr(argv[i], ':');
        if (cfg->n_slos > 0 && colon && sg_metric_find(argv[i], (size_t)(colon - argv[i]), &id) == 0) {
            rc = parse_goodput(cfg, argv[i]);
            if (rc)
                return rc;
            continue;
        }
        return fail(NULL, "unexpected argument \"%s\" (surge profile takes only flags; see surge profile --help)",
                    argv[i]);
    }
    return finish(cfg, st);
}

/* Ramps (vLLM's --ramp-up-* and AIPerf's --*-ramp-duration) and cancellation tests: what they need and exclude, and
 * the rate ramp's duration when not given (docs/scheduling.md). */
static int finish_ramp_cancel(sg_config_t *cfg, parse_state_t *st)
{
    bool vllm = cfg->ramp_strategy || st->ramp_start_given || st->ramp_end > 0;
    if (vllm || st->ramp_dur_given) {
        const char *flag = cfg->ramp_strategy     ? "ramp-up-strategy"
                           : st->ramp_dur_given   ? "request-rate-ramp-duration"
                           : st->ramp_start_given ? "ramp-up-start-rps"
                                                  : "ramp-up-end-rps";
        if (cfg->sweep || cfg->search)
            return fail(flag, "ramps the rate of one run; not with a sweep or a search");
        if (cfg->fixed_schedule)
            return fail(flag, "not with --fixed-schedule: the trace's timestamps are the schedule");
        if (st->concurrency_given)
            return fail(flag, "ramps an open loop's rate; a closed loop (--concurrency) ramps with "
                              "--concurrency-ramp-duration S");
        if (st->ramp_end > 0) {
            if (st->rate_given && cfg->request_rate != st->ramp_end)
                return fail("ramp-up-end-rps", "is the rate the ramp ends at, and --request-rate says another: give "
                                               "one of them");
            cfg->request_rate = st->ramp_end;
            st->rate_given = true;
        }
        if (!st->rate_given)
            return fail(flag, "needs the rate to ramp to: --ramp-up-end-rps R (vLLM) or --request-rate R (AIPerf)");
        if (isinf(cfg->request_rate))
            return fail(flag, "needs a finite rate to ramp to (--request-rate inf has no ramp)");
        if (!cfg->ramp_strategy) {
            if (!st->ramp_dur_given)
                return fail(flag, "needs --ramp-up-strategy linear|exponential (or --request-rate-ramp-duration S "
                                  "for a linear ramp)");
            cfg->ramp_strategy = SG_RAMP_LINEAR;
        }
        if (cfg->ramp_strategy == SG_RAMP_EXPONENTIAL && cfg->ramp_start_rps <= 0)
            return fail("ramp-up-start-rps", "an exponential ramp needs a start rate above 0 (e.g. "
                                             "--ramp-up-start-rps 1)");
        if (cfg->ramp_start_rps > cfg->request_rate)
            return fail("ramp-up-start-rps", "%g is above the rate the ramp ends at (%g): ramps go up",
                        cfg->ramp_start_rps, cfg->request_rate);
        if (!st->ramp_dur_given) {
            /* vLLM's ramp spans the whole run: a count-bounded run's ramp holds its requests (Lambda(D) = N), a
             * duration-bounded one's is the duration */
            if (st->count_given || !st->duration_given) {
                double n = (double)(st->count_given ? cfg->request_count : DEFAULT_REQUEST_COUNT) +
                           (double)cfg->warmup_request_count;
                cfg->ramp_duration_s =
                    sg_ramp_duration_for((sg_ramp_t)cfg->ramp_strategy, cfg->ramp_start_rps, cfg->request_rate, n);
            } else {
                cfg->ramp_duration_s = cfg->benchmark_duration_s;
            }
        }
    }
    if (cfg->concurrency_ramp_s > 0) {
        if (st->rate_given || cfg->fixed_schedule)
            return fail("concurrency-ramp-duration", "ramps a closed loop's --concurrency; an open loop ramps its "
                                                     "rate (--request-rate-ramp-duration S)");
        if (cfg->sweep || cfg->search)
            return fail("concurrency-ramp-duration", "ramps one run; not with a sweep or a search");
    }
    if (cfg->cancel_rate_pct > 0 && cfg->turn_mean > 1)
        return fail("request-cancellation-rate", "cancels single requests; not with multi-turn sessions");
    if (st->cancel_delay_given && cfg->cancel_rate_pct == 0)
        return fail("request-cancellation-delay", "needs --request-cancellation-rate P (the percentage of requests "
                                                  "to cancel)");
    return 0;
}

int sg_config_parse(sg_config_t *cfg, int argc, char **argv)
{
    parse_state_t st;
    memset(&st, 0, sizeof st);
    /* --config FILE: the file's keys become flags ahead of argv's (engine/cfgfile.c; argv's win) */
    sg_cfgfile_t cf;
    int rc = sg_cfgfile_expand(argc, argv, &cf);
    if (rc != 0)
        return rc;
    rc = set_defaults(cfg);
    if (rc == 0 && !(st.extra = json_object()))
        rc = oom();
    if (rc == 0)
        rc = parse_argv(cfg, &st, cf.argc, cf.argv);
    if (rc == 0 && cf.path) {
        cfg->config_file = cf.path;
        cf.path = NULL;
        memcpy(cfg->config_sha256, cf.sha256, sizeof cfg->config_sha256);
    }
    sg_cfgfile_free(&cf);
    json_decref(st.extra);
    free(st.endpoint);
    if (rc != 0) {
        bool show_version = cfg->show_version;
        sg_config_free(cfg);
        cfg->show_version = show_version;
    }
    return rc;
}

const struct option *sg_config_options(const char **shorts)
{
    return sg_opt_getopt(shorts);
}

bool sg_config_option_repeatable(int val)
{
    const sg_opt_t *r = sg_opt_by_val(val);
    return r && (r->flags & SG_OPT_REPEATABLE);
}

int sg_config_check_value(const char *name, const char *arg, const char *where)
{
    const sg_opt_t *o = sg_opt_find(name);
    if (!o || (o->flags & SG_OPT_NOT_A_KEY))
        return fail(NULL, "unknown option --%s", name);
    sg_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    parse_state_t st;
    memset(&st, 0, sizeof st);
    int rc = set_defaults(&cfg);
    if (rc == 0 && !(st.extra = json_object()))
        rc = oom();
    fail_where = where;
    quiet_notes = true;
    if (rc == 0)
        rc = one_option(&cfg, &st, o->val, name, arg);
    quiet_notes = false;
    fail_where = NULL;
    json_decref(st.extra);
    free(st.endpoint);
    sg_config_free(&cfg);
    return rc;
}

void sg_config_free(sg_config_t *cfg)
{
    free(cfg->config_file);
    free(cfg->coordinator);
    for (size_t i = 0; i < cfg->n_models; i++)
        free(cfg->models[i]);
    free(cfg->models);
    for (size_t i = 0; i < cfg->n_headers; i++)
        free(cfg->headers[i]);
    free(cfg->headers);
    free(cfg->url);
    for (size_t i = 0; i < cfg->n_urls; i++) {
        free(cfg->urls[i].url);
        free(cfg->urls[i].host);
        free(cfg->urls[i].host_header);
    }
    free(cfg->host);
    free(cfg->base_path);
    free(cfg->host_header);
    free(cfg->endpoint_path);
    free(cfg->extra_inputs_json);
    free(cfg->tokenizer);
    free(cfg->input_file);
    free(cfg->tools_file);
    free(cfg->tool_choice);
    free(cfg->tools_json);
    free(cfg->cacert);
    free(cfg->local_address);
    free(cfg->client_cert);
    free(cfg->client_key);
    free(cfg->artifact_dir);
    free(cfg->profile_export_file);
    free(cfg->profile_export_stem);
    free(cfg->sweep_values);
    for (size_t i = 0; i < cfg->n_server_metrics_urls; i++)
        free(cfg->server_metrics_urls[i]);
    memset(cfg, 0, sizeof *cfg);
}

/* ---------- derived text ---------- */

/* Compact and exact: 500, 12.5, 0.1 (no trailing zeros, no exponent for ordinary rates). */
static void format_rate(char *buf, size_t len, double r)
{
    snprintf(buf, len, "%.15g", r);
}

char *sg_config_run_name(const sg_config_t *cfg)
{
    if (!cfg->n_models)
        return NULL;
    char load[64];
    if (cfg->fixed_schedule) {
        snprintf(load, sizeof load, "fixed_schedule");
    } else if (cfg->search) {
        snprintf(load, sizeof load, "search_%s",
                 cfg->search == SG_SEARCH_MAX_RATE ? "max_request_rate" : "max_concurrency");
    } else if (cfg->sweep) {
        snprintf(load, sizeof load, "%s_sweep", cfg->sweep == SG_SWEEP_RATE ? "request_rate" : "concurrency");
    } else if (cfg->request_rate > 0) {
        char r[40];
        format_rate(r, sizeof r, cfg->request_rate);
        snprintf(load, sizeof load, "request_rate%s", r);
    } else {
        snprintf(load, sizeof load, "concurrency%" PRIu32, cfg->concurrency);
    }
    /* GenAI-Perf: <model>-openai-<endpoint type>-<load>, or <model>-triton-<backend>-<load> */
    const char *kind = cfg->triton ? "-triton-" : "-openai-";
    const char *type =
        cfg->triton ? sg_kserve_backend_name((sg_kserve_backend_t)cfg->backend) : sg_endpoint(cfg->endpoint_type)->name;
    /* GenAI-Perf: the first model, "_multi" when there are several, '/' made '_' to stay one directory */
    const char *multi = cfg->n_models > 1 ? "_multi" : "";
    size_t len = strlen(cfg->models[0]) + strlen(multi) + strlen(kind) + strlen(type) + 1 + strlen(load) + 1;
    char *name = malloc(len);
    if (!name)
        return NULL;
    snprintf(name, len, "%s%s%s%s-%s", cfg->models[0], multi, kind, type, load);
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '_';
    return name;
}

static bool secret_header(const char *line)
{
    static const char *const names[] = {"authorization", "proxy-authorization", "api-key", "x-api-key", "cookie"};
    for (size_t i = 0; i < SG_ARRAY_LEN(names); i++) {
        size_t n = strlen(names[i]);
        if (strncasecmp(line, names[i], n) == 0 && (line[n] == ':' || line[n] == '=')) /* '=': vLLM's form */
            return true;
    }
    return false;
}

/* ---------- the echo of the configuration (sg_options.h): the rows' hooks and conditions ---------- */

static void set_str_or_null(json_t *o, const char *key, const char *v)
{
    json_object_set_new(o, key, v ? json_string(v) : json_null());
}

static json_t *str_array(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a ? a : json_null();
}

/* the conditions under which a row's value means something (else its echo is null) */
#define ECHO_IF(name, expr)                                                                                            \
    bool sg_echo_if_##name(const sg_config_t *cfg)                                                                     \
    {                                                                                                                  \
        return expr;                                                                                                   \
    }
ECHO_IF(rate, cfg->request_rate > 0)
ECHO_IF(closed, !(cfg->request_rate > 0))
ECHO_IF(grace, cfg->benchmark_grace_s >= 0)
ECHO_IF(rankings, cfg->rankings.on)
ECHO_IF(prefix, cfg->num_prefix > 0)
ECHO_IF(fixed, cfg->fixed_schedule)
ECHO_IF(gamma, cfg->request_rate > 0 && cfg->distribution == SG_DIST_GAMMA)
ECHO_IF(urls, cfg->n_urls > 1)
ECHO_IF(rank, cfg->rank >= 0)
ECHO_IF(ramp, cfg->request_rate > 0 && cfg->ramp_strategy)

/* the hooks that echo one key: its value */
#define ECHO_KEY(name, key, expr)                                                                                      \
    void sg_echo_##name(json_t *o, const sg_config_t *cfg)                                                             \
    {                                                                                                                  \
        json_object_set_new(o, key, expr);                                                                             \
    }
ECHO_KEY(models, "model", str_array(cfg->models, cfg->n_models))
ECHO_KEY(backend, "backend",
         cfg->triton ? json_string(sg_kserve_backend_name((sg_kserve_backend_t)cfg->backend)) : json_null())
ECHO_KEY(endpoint_type, "endpoint_type", json_string(cfg->triton ? "kserve" : sg_endpoint(cfg->endpoint_type)->name))
ECHO_KEY(input_format, "input_format",
         cfg->input_file ? json_string(sg_input_format_name((sg_input_format_t)cfg->input_format)) : json_null())
ECHO_KEY(server_metrics_urls, "server_metrics_url", str_array(cfg->server_metrics_urls, cfg->n_server_metrics_urls))
ECHO_KEY(io_backend, "io_backend", json_string(sg_io_backend_name(cfg->io_backend)))
ECHO_KEY(coalesce_us, "coalesce_us",
         cfg->coalesce_us == SG_COALESCE_AUTO ? json_string("auto") : json_integer(cfg->coalesce_us))
ECHO_KEY(stability, "stability",
         cfg->measurement_interval_ms > 0
             ? json_pack("{s:f,s:f,s:i}", "measurement_interval_ms", cfg->measurement_interval_ms,
                         "stability_percentage", cfg->stability_pct, "max_trials", (int)cfg->max_trials)
             : json_null())
ECHO_KEY(search, "search",
         cfg->search
             ? json_pack("{s:s,s:f,s:o,s:f,s:i,s:i,s:f}", "kind",
                         cfg->search == SG_SEARCH_MAX_RATE ? "max-request-rate" : "max-concurrency", "range_lo",
                         cfg->search_lo, "range_hi", cfg->search_hi > 0 ? json_real(cfg->search_hi) : json_null(),
                         "precision", cfg->search_precision, "trials", (int)cfg->search_trials, "max_trials",
                         (int)cfg->search_max_trials, "cooldown_seconds", cfg->cooldown_s)
             : json_null())
ECHO_KEY(multi_run, "multi_run",
         cfg->num_profile_runs > 1
             ? json_pack("{s:i,s:f,s:f,s:b}", "num_profile_runs", (int)cfg->num_profile_runs, "confidence_level",
                         cfg->confidence_level, "cooldown_seconds", cfg->profile_run_cooldown_s,
                         "warmup_only_first_run", (int)cfg->warmup_only_first_run)
             : json_null())

void sg_echo_url(json_t *o, const sg_config_t *cfg)
{
    set_str_or_null(o, "url", cfg->url);
    if (cfg->n_urls > 1) {
        json_t *urls = json_array();
        for (size_t i = 0; urls && i < cfg->n_urls; i++)
            json_array_append_new(urls, json_string(cfg->urls[i].url));
        json_object_set_new(o, "urls", urls ? urls : json_null());
    }
}

void sg_echo_headers(json_t *o, const sg_config_t *cfg)
{
    /* the summary file gets shared: keep credentials out of it */
    json_t *headers = json_array();
    for (size_t i = 0; headers && i < cfg->n_headers; i++) {
        char buf[64];
        size_t nl = strcspn(cfg->headers[i], ":");
        snprintf(buf, sizeof buf, "%.*s: <redacted>", (int)(nl < 40 ? nl : 40), cfg->headers[i]);
        json_array_append_new(headers, json_string(secret_header(cfg->headers[i]) ? buf : cfg->headers[i]));
    }
    json_object_set_new(o, "headers", headers ? headers : json_null());
}

void sg_echo_extra_inputs(json_t *o, const sg_config_t *cfg)
{
    json_t *extra = cfg->extra_inputs_json ? json_loads(cfg->extra_inputs_json, 0, NULL) : NULL;
    json_object_set_new(o, "extra_inputs", extra ? extra : json_object());
}

void sg_echo_goodput(json_t *o, const sg_config_t *cfg)
{
    json_t *slos = json_object();
    for (size_t i = 0; slos && i < cfg->n_slos; i++) {
        const char *tag = sg_metric_tag(cfg->slos[i].metric);
        json_object_set_new(slos, tag ? tag : "?", json_real(cfg->slos[i].threshold));
    }
    json_object_set_new(o, "goodput", slos ? slos : json_null());
}

void sg_echo_sweep(json_t *o, const sg_config_t *cfg)
{
    json_t *sweep = cfg->sweep ? json_object() : NULL, *values = sweep ? json_array() : NULL;
    for (size_t i = 0; values && i < cfg->n_sweep_values; i++)
        json_array_append_new(values, cfg->sweep == SG_SWEEP_RATE ? json_real(cfg->sweep_values[i])
                                                                  : json_integer((json_int_t)cfg->sweep_values[i]));
    if (sweep) {
        json_object_set_new(sweep, "kind", json_string(cfg->sweep == SG_SWEEP_RATE ? "request_rate" : "concurrency"));
        json_object_set_new(sweep, "values", values ? values : json_null());
        json_object_set_new(sweep, "cooldown_seconds", json_real(cfg->cooldown_s));
    }
    json_object_set_new(o, "sweep", sweep ? sweep : json_null());
}

void sg_echo_slo(json_t *o, const sg_config_t *cfg)
{
    json_t *slo = json_array();
    for (size_t i = 0; slo && i < cfg->n_slo_checks; i++)
        json_array_append_new(slo, json_string(cfg->slo_checks[i].text));
    json_object_set_new(o, "slo", slo ? slo : json_null());
}

void sg_echo_config_file(json_t *o, const sg_config_t *cfg)
{
    /* --config: which file, and which content of it, the flags came from */
    set_str_or_null(o, "config_file", cfg->config_file);
    set_str_or_null(o, "config_file_sha256", cfg->config_file ? cfg->config_sha256 : NULL);
}

/* A generically echoed row's value (sg_options.h): its field as its type says, or null where it means nothing. */
static json_t *echo_value(const sg_opt_t *r, const sg_config_t *cfg)
{
    const void *f = (const char *)cfg + r->field;
    bool zero_null = r->flags & SG_OPT_ECHO_ZERO_NULL;
    if (r->echo_if && !r->echo_if(cfg))
        return r->flags & SG_OPT_ECHO_OFF_ZERO ? json_integer(0) : json_null();
    switch (r->type != SG_OT_CUSTOM ? (int)r->type : r->echo_type) {
    case SG_OT_FLAG:
        return json_boolean(*(const bool *)f);
    case SG_OT_BOOL_WORD:
        return json_string(r->choices[*(const bool *)f]);
    case SG_OT_U32:
        return zero_null && !*(const uint32_t *)f ? json_null() : json_integer(*(const uint32_t *)f);
    case SG_OT_INT:
        return json_integer(*(const int32_t *)f);
    case SG_OT_U64: {
        uint64_t v = *(const uint64_t *)f;
        char text[24]; /* as text where it does not fit json_int_t */
        snprintf(text, sizeof text, "%" PRIu64, v);
        return zero_null && !v ? json_null() : v <= INT64_MAX ? json_integer((json_int_t)v) : json_string(text);
    }
    case SG_OT_NUM: {
        double v = *(const double *)f; /* JSON has no infinity: "inf", as the flag is spelled */
        return zero_null && v == 0 ? json_null() : isinf(v) ? json_string("inf") : json_real(v);
    }
    case SG_OT_STR:
        return *(char *const *)f ? json_string(*(char *const *)f) : json_null();
    case SG_OT_ENUM:
        for (size_t i = 0; r->choices[i]; i++)
            if (r->values[i] == *(const int *)f)
                return json_string(r->choices[i]);
        return json_null();
    default:
        return NULL;
    }
}

char *sg_config_to_json(const sg_config_t *cfg)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    char key[64];
    for (size_t i = 0; i < sg_opt_count; i++) {
        const sg_opt_t *r = &sg_opt_table[i];
        if (r->echo)
            r->echo(o, cfg);
        else if (!r->no_echo && (r->type != SG_OT_CUSTOM || r->echo_type))
            json_object_set_new(o, sg_opt_echo_key(r, key, sizeof key), echo_value(r, cfg));
    }
    /* derived, no option's: what ISL counts */
    json_object_set_new(o, "isl_estimate", json_string(cfg->tokenizer ? "tokens" : "words"));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

json_t *sg_config_default_echo(void)
{
    sg_config_t c;
    char *text = set_defaults(&c) == 0 ? sg_config_to_json(&c) : NULL;
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    sg_config_free(&c);
    return j;
}

/* One word for a POSIX shell: as it is when it holds only characters no shell treats specially, else in single
 * quotes (a quote inside as '\''). Appended to *buf at *len (grown as needed); false when out of memory. */
static bool shell_word(char **buf, size_t *len, size_t *cap, const char *w)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
    bool plain = *w && strspn(w, safe) == strlen(w);
    size_t need = *len + 4 * strlen(w) + 4;
    if (need > *cap) {
        size_t ncap = need * 2;
        char *n = realloc(*buf, ncap);
        if (!n)
            return false;
        *buf = n;
        *cap = ncap;
    }
    char *o = *buf + *len;
    if (*len)
        *o++ = ' ';
    if (!plain)
        *o++ = '\'';
    for (; *w; w++) {
        if (*w == '\'' && !plain) {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *w;
        }
    }
    if (!plain)
        *o++ = '\'';
    *o = '\0';
    *len = (size_t)(o - *buf);
    return true;
}

/* A header argument as the summary shows it: a credential's value replaced (malloc'd, or NULL). */
static char *redacted_header(const char *prefix, const char *line)
{
    size_t nl = strcspn(line, ":=");
    size_t len = strlen(prefix) + strlen(line) + sizeof ": <redacted>";
    char *out = malloc(len);
    if (!out)
        return NULL;
    if (secret_header(line))
        snprintf(out, len, "%s%.*s: <redacted>", prefix, (int)nl, line);
    else
        snprintf(out, len, "%s%s", prefix, line);
    return out;
}

char *sg_config_command(int argc, char *const *argv)
{
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    bool ok = shell_word(&buf, &len, &cap, "surge");
    for (int i = 0; ok && i < argc; i++) {
        const char *a = argv[i];
        char *own = NULL;
        if (i > 0 && strcmp(argv[i - 1], "--api-key") == 0)
            a = "<redacted>";
        else if (strncmp(a, "--api-key=", 10) == 0)
            a = "--api-key=<redacted>";
        else if (i > 0 && (strcmp(argv[i - 1], "-H") == 0 || strcmp(argv[i - 1], "--header") == 0))
            a = own = redacted_header("", a);
        else if (strncmp(a, "--header=", 9) == 0)
            a = own = redacted_header("--header=", a + 9);
        else if (strncmp(a, "-H", 2) == 0 && a[2])
            a = own = redacted_header("-H", a + 2);
        ok = a && shell_word(&buf, &len, &cap, a);
        free(own);
    }
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}
