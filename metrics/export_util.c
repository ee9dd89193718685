#include "sg_export_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void release(sg_outfile_t *of)
{
    free(of->tmp);
    free(of->path);
    of->tmp = of->path = NULL;
    of->f = NULL;
}

int sg_outfile_open(sg_outfile_t *of, const char *path)
{
    static const char suffix[] = ".tmp.XXXXXX";
    memset(of, 0, sizeof(*of));
    size_t len = strlen(path);
    of->path = strdup(path);
    of->tmp = malloc(len + sizeof(suffix));
    if (!of->path || !of->tmp) {
        release(of);
        return -ENOMEM;
    }
    memcpy(of->tmp, path, len);
    memcpy(of->tmp + len, suffix, sizeof(suffix));
    int fd = mkstemp(of->tmp);
    if (fd < 0) {
        int err = -errno;
        release(of);
        return err;
    }
    /* mkstemp makes 0600; results are meant to be shared like any file the user writes. */
    (void)fchmod(fd, 0644);
    of->f = fdopen(fd, "w");
    if (!of->f) {
        int err = -errno;
        close(fd);
        unlink(of->tmp);
        release(of);
        return err;
    }
    return 0;
}

int sg_outfile_commit(sg_outfile_t *of)
{
    int err = 0;
    errno = 0;
    if (fflush(of->f) != 0 || ferror(of->f))
        err = errno ? -errno : -EIO;
    if (!err && fsync(fileno(of->f)) != 0 && errno != EINVAL && errno != EROFS)
        err = -errno;
    if (fclose(of->f) != 0 && !err)
        err = errno ? -errno : -EIO;
    if (!err && rename(of->tmp, of->path) != 0)
        err = -errno;
    if (err)
        unlink(of->tmp);
    release(of);
    return err;
}

void sg_outfile_abort(sg_outfile_t *of)
{
    if (of->f) {
        fclose(of->f);
        unlink(of->tmp);
    }
    release(of);
}

size_t sg_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte: excludes overlongs and surrogates */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

void sg_json_put_string(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    putc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc(c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f);
            i++;
        } else if (c == '\r') {
            fputs("\\r", f);
            i++;
        } else if (c == '\t') {
            fputs("\\t", f);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            putc(c, f);
            i++;
        } else {
            size_t n = sg_utf8_seq_len(p + i, len - i);
            if (n == 0) {
                /* Server text is not ours to trust: keep the line valid JSON. */
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, n, f);
                i += n;
            }
        }
    }
    putc('"', f);
}

void sg_utf8_sanitize(char *dst, size_t cap, const char *src)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t len = strlen(src), o = 0;
    for (size_t i = 0; i < len && o + 1 < cap;) {
        size_t n = sg_utf8_seq_len(p + i, len - i);
        if (n == 0) {
            dst[o++] = '?';
            i++;
        } else if (o + n < cap) {
            memcpy(dst + o, p + i, n);
            o += n;
            i += n;
        } else {
            break; /* never cut a sequence in half */
        }
    }
    dst[o] = '\0';
}
