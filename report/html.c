/*
 * The page: one self-contained HTML file. Chart.js (Debian's libjs-chart.js), our page script and style are
 * compiled into surge (report/assets, embedded by CMake) and written inline, with the data as a JSON script
 * element, so the file opens offline from a file:// URL.
 *
 * JSON_ESCAPE_SLASH writes every "/" in the data as "\/", so no string in it can close its script element.
 * The file appears whole or not at all: it is written to a temporary name beside the target and renamed.
 */
#include "report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Generated from the asset files at build time (cmake/embed.cmake). */
extern const unsigned char sg_asset_chart_js[];
extern const unsigned long sg_asset_chart_js_len;
extern const unsigned char sg_asset_report_js[];
extern const unsigned long sg_asset_report_js_len;
extern const unsigned char sg_asset_report_css[];
extern const unsigned long sg_asset_report_css_len;

static int dump_to(const char *buf, size_t size, void *data)
{
    return fwrite(buf, 1, size, data) == size ? 0 : -1;
}

static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static int write_page(FILE *f, const char *title, json_t *data)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    html_escape(f, title);
    fputs("</title>\n<style>\n", f);
    fwrite(sg_asset_report_css, 1, sg_asset_report_css_len, f);
    fputs("</style>\n</head>\n<body>\n<main id=\"app\"><p id=\"loading\">Drawing the report&hellip;</p></main>\n"
          "<pre id=\"selfcheck\" hidden></pre>\n<script id=\"surge-data\" type=\"application/json\">",
          f);
    /* the charts' points to 7 digits; the files' own numbers as they are */
    json_t *files = json_incref(json_object_get(data, "files"));
    json_object_del(data, "files");
    int rc = json_dump_callback(data, dump_to, f, JSON_COMPACT | JSON_ESCAPE_SLASH | JSON_REAL_PRECISION(7));
    json_object_set_new(data, "files", files);
    if (rc != 0)
        return -1;
    fputs("</script>\n<script id=\"surge-files\" type=\"application/json\">", f);
    if (json_dump_callback(files ? files : json_null(), dump_to, f, JSON_COMPACT | JSON_ESCAPE_SLASH) != 0)
        return -1;
    fputs("</script>\n<script>\n", f);
    fwrite(sg_asset_chart_js, 1, sg_asset_chart_js_len, f);
    fputs("\n</script>\n<script>\n", f);
    fwrite(sg_asset_report_js, 1, sg_asset_report_js_len, f);
    fputs("\n</script>\n</body>\n</html>\n", f);
    return ferror(f) ? -1 : 0;
}

int rp_write_html(const char *path, const char *title, json_t *data, char *err, size_t errlen)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    int rc = write_page(f, title, data);
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(saved ? saved : EIO));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}
