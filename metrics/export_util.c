#define _GNU_SOURCE /* O_DIRECT, mkostemp */
#include "sg_export_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Under the FILE: stdio reports a failed write only as ferror(), and by the time a caller looks errno is gone, so a
 * full disk read as "Input/output error". The sink keeps the first write's errno. */
struct sg_outfile_sink {
    int fd;
    int err; /* -errno of the first failed write; 0: none */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
    struct sg_outfile_sink *k = cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(k->fd, buf + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!k->err)
                k->err = n < 0 ? -errno : -ENOSPC; /* a write of 0 bytes to a regular file: no room */
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static int sink_close(void *cookie)
{
    struct sg_outfile_sink *k = cookie;
    int rc = close(k->fd);
    if (rc != 0 && !k->err)
        k->err = -errno;
    return rc;
}

int sg_outfile_error(const sg_outfile_t *of)
{
    return of->sink && of->sink->err ? of->sink->err : -EIO;
}

static void release(sg_outfile_t *of)
{
    free(of->tmp);
    free(of->path);
    free(of->sink);
    of->tmp = of->path = NULL;
    of->sink = NULL;
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
    of->sink = calloc(1, sizeof *of->sink);
    if (of->sink) {
        of->sink->fd = fd;
        of->f = fopencookie(of->sink, "w", (cookie_io_functions_t){.write = sink_write, .close = sink_close});
    }
    if (!of->f) {
        int err = of->sink ? -errno : -ENOMEM;
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
    if (fflush(of->f) != 0 || ferror(of->f))
        err = sg_outfile_error(of);
    if (!err && fsync(of->sink->fd) != 0 && errno != EINVAL && errno != EROFS)
        err = -errno;
    if (fclose(of->f) != 0 && !err)
        err = sg_outfile_error(of);
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

/* ---------- sg_outbuf_t ---------- */

/* O_DIRECT wants the buffer, the length and the file offset aligned to the device's logical block (512 or 4096). */
#define OUTBUF_ALIGN 4096u

static void outbuf_release(sg_outbuf_t *ob)
{
    free(ob->buf);
    free(ob->tmp);
    free(ob->path);
    ob->buf = ob->tmp = ob->path = NULL;
    ob->fd = -1;
}

int sg_outbuf_open(sg_outbuf_t *ob, const char *path)
{
    static const char suffix[] = ".tmp.XXXXXX";
    memset(ob, 0, sizeof(*ob));
    ob->fd = -1;
    size_t len = strlen(path);
    ob->path = strdup(path);
    ob->tmp = malloc(len + sizeof(suffix));
    void *buf = NULL;
    if (!ob->path || !ob->tmp || posix_memalign(&buf, OUTBUF_ALIGN, SG_OUTBUF_CAP) != 0) {
        outbuf_release(ob);
        return -ENOMEM;
    }
    ob->buf = buf;
    memcpy(ob->tmp, path, len);
    memcpy(ob->tmp + len, suffix, sizeof(suffix));
    ob->fd = mkostemp(ob->tmp, O_CLOEXEC);
    if (ob->fd < 0) {
        int err = -errno;
        outbuf_release(ob);
        return err;
    }
    (void)fchmod(ob->fd, 0644);
    /* Not every file system takes O_DIRECT (tmpfs on older kernels, some FUSE): then the page cache it is. */
    int fl = fcntl(ob->fd, F_GETFL);
    ob->direct = fl >= 0 && fcntl(ob->fd, F_SETFL, fl | O_DIRECT) == 0;
    return 0;
}

static void outbuf_buffered(sg_outbuf_t *ob)
{
    int fl = fcntl(ob->fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(ob->fd, F_SETFL, fl & ~O_DIRECT);
    ob->direct = false;
}

static int outbuf_write(sg_outbuf_t *ob, const char *p, size_t len)
{
    while (len && !ob->err) {
        ssize_t n = write(ob->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EINVAL && ob->direct) {
            outbuf_buffered(ob); /* accepted at open, refused on write: fall back */
            continue;
        }
        if (n <= 0) {
            ob->err = n < 0 ? -errno : -EIO;
            break;
        }
        /* A short direct write leaves an unaligned remainder: finish the file through the page cache. */
        if (ob->direct && ((size_t)n % OUTBUF_ALIGN) != 0)
            outbuf_buffered(ob);
        p += n;
        len -= (size_t)n;
    }
    return ob->err;
}

char *sg_outbuf_room_slow(sg_outbuf_t *ob, size_t n)
{
    if (ob->err)
        return NULL;
    /* Write the whole blocks; the tail (less than one block) moves to the front. */
    size_t out = ob->direct ? ob->len / OUTBUF_ALIGN * OUTBUF_ALIGN : ob->len;
    if (outbuf_write(ob, ob->buf, out))
        return NULL;
    memmove(ob->buf, ob->buf + out, ob->len - out);
    ob->len -= out;
    if (SG_OUTBUF_CAP - ob->len < n) {
        ob->err = SG_ETOOBIG;
        return NULL;
    }
    return ob->buf + ob->len;
}

int sg_outbuf_commit(sg_outbuf_t *ob)
{
    if (ob->direct) {
        size_t out = ob->len / OUTBUF_ALIGN * OUTBUF_ALIGN;
        (void)outbuf_write(ob, ob->buf, out);
        memmove(ob->buf, ob->buf + out, ob->len - out);
        ob->len -= out;
        outbuf_buffered(ob);
    }
    int err = outbuf_write(ob, ob->buf, ob->len);
    if (!err && fsync(ob->fd) != 0 && errno != EINVAL && errno != EROFS)
        err = -errno;
    if (close(ob->fd) != 0 && !err)
        err = -errno;
    ob->fd = -1;
    if (!err && rename(ob->tmp, ob->path) != 0)
        err = -errno;
    if (err)
        unlink(ob->tmp);
    outbuf_release(ob);
    return err;
}

void sg_outbuf_abort(sg_outbuf_t *ob)
{
    if (ob->fd >= 0) {
        close(ob->fd);
        unlink(ob->tmp);
    }
    outbuf_release(ob);
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

size_t sg_json_escape(char *dst, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    char *o = dst;
    *o++ = '"';
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
            i++;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            *o++ = '\\';
            *o++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[c >> 4];
            o[5] = hex[c & 15];
            o += 6;
            i++;
        } else if (c < 0x80) {
            *o++ = (char)c;
            i++;
        } else {
            size_t n = sg_utf8_seq_len(p + i, len - i);
            if (n == 0) {
                /* Server text is not ours to trust: keep the line valid JSON. */
                memcpy(o, "\\ufffd", 6);
                o += 6;
                i++;
            } else {
                memcpy(o, p + i, n);
                o += n;
                i += n;
            }
        }
    }
    *o++ = '"';
    return (size_t)(o - dst);
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

void sg_csv_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (s = s ? s : ""; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void sg_csv_text(FILE *f, const char *s)
{
    s = s ? s : "";
    if (strpbrk(s, ",\"\r\n"))
        sg_csv_quoted(f, s);
    else
        fputs(s, f);
}

/* 15 significant digits: every digit the data has, without %.17g's 0.10000000000000001. */
int sg_json_write(const char *path, json_t *root)
{
    if (!root)
        return -ENOMEM;
    sg_outfile_t of;
    int rc = sg_outfile_open(&of, path);
    if (rc) {
        json_decref(root);
        return rc;
    }
    if (json_dumpf(root, of.f, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0 || fputc('\n', of.f) == EOF) {
        json_decref(root);
        rc = ferror(of.f) ? sg_outfile_error(&of) : -ENOMEM; /* jansson fails on a write or on memory */
        sg_outfile_abort(&of);
        return rc;
    }
    json_decref(root);
    return sg_outfile_commit(&of);
}
