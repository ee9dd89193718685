/*
 * Images and audio for requests (sg_media.h): AIPerf's flags, the synthetic draws, the PNG, JPEG and WAV
 * encoders, base64, and media files an input file names. Runs before the run, once per item.
 */
#define _GNU_SOURCE /* memmem, strndup */
#include "sg_media.h"

#include "sg_workload.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>
#include <setjmp.h>

#define MAX_FILE_BYTES (256u << 20) /* a media file an input file names: read whole, at most this */

__attribute__((format(printf, 3, 4))) static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return SG_EINVAL;
}

void sg_media_defaults(sg_media_spec_t *m)
{
    memset(m, 0, sizeof *m);
    m->image_batch = 1;
    m->image_format = SG_IMG_PNG;
    m->audio_batch = 1;
    m->audio_rates[0] = 16000;
    m->n_rates = 1;
    m->audio_depths[0] = 16;
    m->n_depths = 1;
    m->audio_channels = 1;
}

bool sg_media_images(const sg_media_spec_t *m)
{
    return m->image_batch > 0 && m->image_w_mean > 0 && m->image_h_mean > 0;
}

bool sg_media_audio(const sg_media_spec_t *m)
{
    return m->audio_batch > 0 && m->audio_len_mean > 0;
}

static int parse_double(const char *name, const char *arg, double max, double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v < 0 || v > max)
        return set_err(err, errlen, "--%s: expected a number from 0 to %g, got \"%s\"", name, max, arg);
    *out = v;
    return 0;
}

static int parse_u32(const char *name, const char *arg, uint32_t lo, uint32_t hi, uint32_t *out, char *err,
                     size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(arg, &end, 10);
    if (errno || end == arg || *end || v < lo || v > hi)
        return set_err(err, errlen, "--%s: expected a whole number from %u to %u, got \"%s\"", name, lo, hi, arg);
    *out = (uint32_t)v;
    return 0;
}

/* A list of values separated by commas (or spaces); a repeated flag replaces the list. */
static int parse_list(const char *name, const char *arg, bool khz, uint32_t *vals, uint32_t cap, uint32_t *n, char *err,
                      size_t errlen)
{
    uint32_t k = 0;
    const char *p = arg;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || (*end && *end != ',' && *end != ' '))
            return set_err(err, errlen, "--%s: expected %s separated by commas, got \"%s\"", name,
                           khz ? "sample rates in kHz (16,44.1)" : "bit depths (8,16,24,32)", arg);
        if (k == cap)
            return set_err(err, errlen, "--%s: at most %u values, got \"%s\"", name, cap, arg);
        if (khz) {
            if (!(v >= 1 && v <= 384))
                return set_err(err, errlen, "--%s: a sample rate in kHz from 1 to 384, got %g", name, v);
            vals[k++] = (uint32_t)llround(v * 1000);
        } else {
            if (v != 8 && v != 16 && v != 24 && v != 32)
                return set_err(err, errlen, "--%s: a bit depth of 8, 16, 24 or 32, got %g", name, v);
            vals[k++] = (uint32_t)v;
        }
        p = end;
    }
    if (!k)
        return set_err(err, errlen, "--%s: expected at least one value, got \"%s\"", name, arg);
    *n = k;
    return 0;
}

int sg_media_option(sg_media_spec_t *m, const char *name, const char *arg, char *err, size_t errlen)
{
    static const char *const names[] = {
        "image-width-mean", "image-width-stddev", "image-height-mean",  "image-height-stddev", "image-format",
        "image-batch-size", "batch-size-image",   "audio-length-mean",  "audio-length-stddev", "audio-format",
        "audio-batch-size", "batch-size-audio",   "audio-sample-rates", "audio-depths",        "audio-num-channels",
    };
    const char *known = NULL;
    for (size_t i = 0; i < SG_ARRAY_LEN(names); i++)
        if (strcmp(name, names[i]) == 0)
            known = names[i];
    if (!known)
        return 1;
    if (!m->first_flag)
        m->first_flag = known;
    /* what shapes synthetic media: not a batch size, nor a mean of 0 (AIPerf's default: none) */
    bool shapes = strstr(known, "batch-size") == NULL && !(strstr(known, "-mean") && strtod(arg, NULL) == 0);
    if (shapes && !m->image_flag && strncmp(known, "image-", 6) == 0)
        m->image_flag = known;
    if (shapes && !m->audio_flag && strncmp(known, "audio-", 6) == 0)
        m->audio_flag = known;
    if (strcmp(name, "image-width-mean") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_SIDE, &m->image_w_mean, err, errlen);
    if (strcmp(name, "image-width-stddev") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_SIDE, &m->image_w_stddev, err, errlen);
    if (strcmp(name, "image-height-mean") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_SIDE, &m->image_h_mean, err, errlen);
    if (strcmp(name, "image-height-stddev") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_SIDE, &m->image_h_stddev, err, errlen);
    if (strcmp(name, "image-format") == 0) {
        if (strcasecmp(arg, "png") == 0)
            m->image_format = SG_IMG_PNG;
        else if (strcasecmp(arg, "jpeg") == 0 || strcasecmp(arg, "jpg") == 0)
            m->image_format = SG_IMG_JPEG;
        else if (strcasecmp(arg, "random") == 0)
            m->image_format = SG_IMG_RANDOM;
        else
            return set_err(err, errlen, "--image-format: expected png, jpeg or random, got \"%s\"", arg);
        return 0;
    }
    if (strcmp(name, "image-batch-size") == 0 || strcmp(name, "batch-size-image") == 0)
        return parse_u32(name, arg, 0, SG_MEDIA_MAX_BATCH, &m->image_batch, err, errlen);
    if (strcmp(name, "audio-length-mean") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_AUDIO_S, &m->audio_len_mean, err, errlen);
    if (strcmp(name, "audio-length-stddev") == 0)
        return parse_double(name, arg, SG_MEDIA_MAX_AUDIO_S, &m->audio_len_stddev, err, errlen);
    if (strcmp(name, "audio-format") == 0) {
        if (strcasecmp(arg, "wav") == 0)
            return 0;
        if (strcasecmp(arg, "mp3") == 0)
            return set_err(err, errlen,
                           "--audio-format: surge writes synthetic audio as WAV only (it has no MP3 encoder); "
                           "MP3 files can come from an --input-file");
        return set_err(err, errlen, "--audio-format: expected wav, got \"%s\"", arg);
    }
    if (strcmp(name, "audio-batch-size") == 0 || strcmp(name, "batch-size-audio") == 0)
        return parse_u32(name, arg, 0, SG_MEDIA_MAX_BATCH, &m->audio_batch, err, errlen);
    if (strcmp(name, "audio-sample-rates") == 0)
        return parse_list(name, arg, true, m->audio_rates, SG_MEDIA_MAX_RATES, &m->n_rates, err, errlen);
    if (strcmp(name, "audio-depths") == 0)
        return parse_list(name, arg, false, m->audio_depths, SG_MEDIA_MAX_DEPTHS, &m->n_depths, err, errlen);
    return parse_u32(name, arg, 1, 2, &m->audio_channels, err, errlen); /* audio-num-channels */
}

void sg_media_item_free(sg_media_item_t *it)
{
    free(it->text);
    memset(it, 0, sizeof *it);
}

/* ---------- base64 ---------- */

char *sg_base64(const char *prefix, size_t plen, const uint8_t *in, size_t n, size_t *out_len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t blen = (n + 2) / 3 * 4;
    char *s = malloc(plen + blen + 1);
    if (!s)
        return NULL;
    memcpy(s, prefix, plen);
    char *o = s + plen;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    *out_len = plen + blen;
    return s;
}

/* ---------- encoders ---------- */

typedef struct {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} membuf_t;

static void png_mem_write(png_structp png, png_bytep data, size_t n)
{
    membuf_t *m = png_get_io_ptr(png);
    if (m->oom)
        return;
    if (m->len + n > m->cap) {
        size_t cap = (m->len + n) * 2;
        uint8_t *p = realloc(m->p, cap);
        if (!p) {
            m->oom = true;
            return;
        }
        m->p = p;
        m->cap = cap;
    }
    memcpy(m->p + m->len, data, n);
    m->len += n;
}

static void png_mem_flush(png_structp png)
{
    (void)png;
}

/*
 * libpng's full API, for what the simplified one cannot say: zlib level 0 and no row filters. Noise does not
 * compress, and deflating it took 63% of the time to build a table of 512 x 512 images (a stored block costs 5
 * bytes per 64 KiB; the file is the same size either way).
 */
int sg_png_encode(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out, size_t *out_len)
{
    if (!w || !h || w > SG_MEDIA_MAX_SIDE || h > SG_MEDIA_MAX_SIDE)
        return SG_EINVAL;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    /* volatile: read after longjmp */
    membuf_t *volatile m = calloc(1, sizeof *m);
    if (!png || !info || !m) {
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(m);
        return SG_ENOMEM;
    }
    m->cap = (size_t)w * h * 3 + (size_t)h + 4096;
    m->p = malloc(m->cap);
    if (!m->p || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(m->p);
        free(m);
        return SG_EINVAL;
    }
    png_set_write_fn(png, m, png_mem_write, png_mem_flush);
    png_set_compression_level(png, 0);
    png_set_filter(png, 0, PNG_FILTER_NONE);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < h; y++)
        png_write_row(png, rgb + (size_t)y * w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    int rc = m->oom ? SG_ENOMEM : 0;
    if (rc == 0) {
        *out = m->p;
        *out_len = m->len;
    } else {
        free(m->p);
    }
    free(m);
    return rc;
}

int sg_jpeg_encode(const uint8_t *rgb, uint32_t w, uint32_t h, int quality, uint8_t **out, size_t *out_len)
{
    if (!w || !h || w > SG_MEDIA_MAX_SIDE || h > SG_MEDIA_MAX_SIDE)
        return SG_EINVAL;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr); /* errors cannot happen for valid sizes in memory; libjpeg exits on one */
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &buf, &size);
    c.image_width = w;
    c.image_height = h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)c.next_scanline * w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    if (!buf)
        return SG_ENOMEM;
    *out = buf; /* malloc'd by libjpeg-turbo's memory destination: free() releases it */
    *out_len = size;
    return 0;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void fill_noise(sg_rng_t *rng, uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sg_rng_next(rng);
        memcpy(p + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = sg_rng_next(rng);
        memcpy(p + i, &v, n - i);
    }
}

int sg_wav_encode(sg_rng_t *rng, uint32_t rate, uint32_t depth, uint32_t channels, uint64_t frames, uint8_t **out,
                  size_t *out_len)
{
    if (!rate || (depth != 8 && depth != 16 && depth != 24 && depth != 32) || channels < 1 || channels > 2 || !frames)
        return SG_EINVAL;
    uint32_t block = channels * depth / 8;
    uint64_t data = frames * block;
    if (data > UINT32_MAX - 44)
        return SG_EINVAL;
    uint8_t *b = malloc(44 + data);
    if (!b)
        return SG_ENOMEM;
    memcpy(b, "RIFF", 4);
    put_le(b + 4, 36 + data, 4);
    memcpy(b + 8, "WAVEfmt ", 8);
    put_le(b + 16, 16, 4);                     /* fmt chunk size */
    put_le(b + 20, 1, 2);                      /* PCM */
    put_le(b + 22, channels, 2);               /* channels */
    put_le(b + 24, rate, 4);                   /* sample rate */
    put_le(b + 28, (uint64_t)rate * block, 4); /* byte rate */
    put_le(b + 32, block, 2);                  /* block align */
    put_le(b + 34, depth, 2);                  /* bits per sample */
    memcpy(b + 36, "data", 4);
    put_le(b + 40, data, 4);
    fill_noise(rng, b + 44, (size_t)data); /* uniform noise at every depth */
    *out = b;
    *out_len = 44 + (size_t)data;
    return 0;
}

/* ---------- synthetic items ---------- */

static double draw(sg_rng_t *rng, double mean, double sd)
{
    return mean + sd * sg_rng_normal(rng);
}

int sg_media_synth_image(const sg_media_spec_t *m, sg_rng_t *rng, sg_media_item_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    double w = round(draw(rng, m->image_w_mean, m->image_w_stddev));
    double h = round(draw(rng, m->image_h_mean, m->image_h_stddev));
    out->w = w < 1 ? 1 : w > SG_MEDIA_MAX_SIDE ? SG_MEDIA_MAX_SIDE : (uint32_t)w;
    out->h = h < 1 ? 1 : h > SG_MEDIA_MAX_SIDE ? SG_MEDIA_MAX_SIDE : (uint32_t)h;
    bool jpeg = m->image_format == SG_IMG_JPEG || (m->image_format == SG_IMG_RANDOM && (sg_rng_next(rng) & 1));
    size_t px = (size_t)out->w * out->h * 3;
    uint8_t *rgb = malloc(px);
    if (!rgb)
        return set_err(err, errlen, "out of memory for a %ux%u image", out->w, out->h), SG_ENOMEM;
    /* noise: every image differs from every other, so a server's image cache cannot serve one for another */
    fill_noise(rng, rgb, px);
    uint8_t *file = NULL;
    size_t flen = 0;
    int rc = jpeg ? sg_jpeg_encode(rgb, out->w, out->h, SG_MEDIA_JPEG_QUALITY, &file, &flen)
                  : sg_png_encode(rgb, out->w, out->h, &file, &flen);
    free(rgb);
    if (rc < 0)
        return set_err(err, errlen, "cannot encode a %ux%u %s image: %s", out->w, out->h, jpeg ? "JPEG" : "PNG",
                       sg_strerror(rc)),
               rc;
    const char *prefix = jpeg ? "data:image/jpeg;base64," : "data:image/png;base64,";
    out->text = sg_base64(prefix, strlen(prefix), file, flen, &out->len);
    free(file);
    if (!out->text)
        return set_err(err, errlen, "out of memory encoding an image"), SG_ENOMEM;
    out->kind = SG_MEDIA_IMAGE;
    out->plain = true;
    snprintf(out->fmt, sizeof out->fmt, "%s", jpeg ? "jpeg" : "png");
    return 0;
}

int sg_media_synth_audio(const sg_media_spec_t *m, sg_rng_t *rng, sg_media_item_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint32_t rate = m->audio_rates[m->n_rates > 1 ? sg_rng_next(rng) % m->n_rates : 0];
    uint32_t depth = m->audio_depths[m->n_depths > 1 ? sg_rng_next(rng) % m->n_depths : 0];
    double s = draw(rng, m->audio_len_mean, m->audio_len_stddev);
    if (s > SG_MEDIA_MAX_AUDIO_S)
        s = SG_MEDIA_MAX_AUDIO_S;
    uint64_t frames = s > 0 ? (uint64_t)llround(s * rate) : 0;
    if (!frames)
        frames = 1;
    out->seconds = (double)frames / rate;
    uint8_t *file = NULL;
    size_t flen = 0;
    int rc = sg_wav_encode(rng, rate, depth, m->audio_channels, frames, &file, &flen);
    if (rc < 0)
        return set_err(err, errlen, "cannot write a WAV clip of %.3f s at %u Hz, %u bits, %u channels: %s",
                       out->seconds, rate, depth, m->audio_channels, sg_strerror(rc)),
               rc;
    out->text = sg_base64("", 0, file, flen, &out->len);
    free(file);
    if (!out->text)
        return set_err(err, errlen, "out of memory encoding a clip"), SG_ENOMEM;
    out->kind = SG_MEDIA_AUDIO;
    out->plain = true;
    snprintf(out->fmt, sizeof out->fmt, "wav");
    return 0;
}

/* ---------- files an input file names ---------- */

static bool has_prefix(const char *s, size_t len, const char *p)
{
    size_t pl = strlen(p);
    return len >= pl && strncasecmp(s, p, pl) == 0;
}

/* The format of a file from its first bytes, or NULL. */
static const char *sniff(const uint8_t *b, size_t n, sg_media_kind_t kind)
{
    if (kind == SG_MEDIA_IMAGE) {
        if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
            return "png";
        if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
            return "jpeg";
        if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
            return "gif";
        if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
            return "webp";
        return NULL;
    }
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WAVE", 4) == 0)
        return "wav";
    if ((n >= 3 && memcmp(b, "ID3", 3) == 0) || (n >= 2 && b[0] == 0xff && (b[1] & 0xe0) == 0xe0))
        return "mp3";
    return NULL;
}

static int read_file(const char *path, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    const char *why = NULL;
    char why_buf[160];
    if (fstat(fd, &st) < 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_size == 0)
        why = "empty";
    else if (st.st_size > (off_t)MAX_FILE_BYTES) {
        snprintf(why_buf, sizeof why_buf, "%lld bytes, over the %u MiB a media file may have", (long long)st.st_size,
                 MAX_FILE_BYTES >> 20);
        why = why_buf;
    }
    if (why) {
        close(fd);
        return set_err(err, errlen, "cannot read %s: %s", path, why);
    }
    uint8_t *b = malloc((size_t)st.st_size);
    if (!b) {
        close(fd);
        return SG_ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, b + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            free(b);
            close(fd);
            return set_err(err, errlen, "cannot read %s: %s", path, strerror(e));
        }
        got += (size_t)n;
    }
    close(fd);
    *out = b;
    *out_len = got;
    return 0;
}

int sg_media_from_ref(const char *ref, size_t ref_len, sg_media_kind_t kind, sg_media_item_t *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->kind = (uint8_t)kind;
    const char *what = kind == SG_MEDIA_IMAGE ? "image" : "audio";
    if (ref_len == 0 || memchr(ref, '\0', ref_len))
        return set_err(err, errlen, "an empty %s reference", what);
    if (has_prefix(ref, ref_len, "http://") || has_prefix(ref, ref_len, "https://")) {
        if (kind == SG_MEDIA_AUDIO)
            return set_err(err, errlen,
                           "audio by URL (%.80s): OpenAI's input_audio takes base64 data only and surge fetches "
                           "nothing; give a local file",
                           ref);
        out->text = strndup(ref, ref_len); /* the server fetches it */
        out->len = ref_len;
        snprintf(out->fmt, sizeof out->fmt, "url");
        return out->text ? 0 : SG_ENOMEM;
    }
    if (has_prefix(ref, ref_len, "data:")) {
        const char *comma = memchr(ref, ',', ref_len);
        const char *mime = ref + 5;
        const char *slash = memchr(mime, '/', (size_t)(ref + ref_len - mime));
        if (!comma || !slash || slash > comma || !memmem(ref, (size_t)(comma - ref), ";base64", 7))
            return set_err(err, errlen, "a data URL must be data:%s/FORMAT;base64,DATA, got \"%.60s\"", what, ref);
        const char *f = slash + 1;
        size_t fl = strcspn(f, ";,");
        snprintf(out->fmt, sizeof out->fmt, "%.*s", (int)(fl < 7 ? fl : 7), f);
        if (kind == SG_MEDIA_IMAGE) {
            out->text = strndup(ref, ref_len);
            out->len = ref_len;
        } else { /* input_audio carries the base64 alone, and its format beside it */
            out->len = ref_len - (size_t)(comma + 1 - ref);
            out->text = strndup(comma + 1, out->len);
        }
        return out->text ? 0 : SG_ENOMEM;
    }
    char path[4096];
    if (ref_len >= sizeof path)
        return set_err(err, errlen, "an %s path of %zu bytes is too long", what, ref_len);
    memcpy(path, ref, ref_len);
    path[ref_len] = '\0';
    uint8_t *b = NULL;
    size_t n = 0;
    int rc = read_file(path, &b, &n, err, errlen);
    if (rc < 0)
        return rc;
    const char *fmt = sniff(b, n, kind);
    if (!fmt) {
        free(b);
        return set_err(err, errlen, "%s is not %s", path,
                       kind == SG_MEDIA_IMAGE ? "a PNG, JPEG, GIF or WebP image" : "WAV or MP3 audio");
    }
    snprintf(out->fmt, sizeof out->fmt, "%s", fmt);
    char prefix[40] = "";
    if (kind == SG_MEDIA_IMAGE)
        snprintf(prefix, sizeof prefix, "data:image/%s;base64,", fmt);
    out->text = sg_base64(prefix, strlen(prefix), b, n, &out->len);
    out->plain = true;
    free(b);
    return out->text ? 0 : SG_ENOMEM;
}

/* ---------- the summary ---------- */

char *sg_media_summary(const sg_payload_table_t *t, uint64_t sent)
{
    if (!t->n_entries || !t->n_variants)
        return NULL;
    /* every variant of an entry carries the same media: variant 0 stands for the entry */
    uint64_t img_all = 0, aud_all = 0, bytes_all = 0, req_all = 0, img_part = 0, aud_part = 0, bytes_part = 0,
             req_part = 0, with = 0, with_part = 0, mn = UINT64_MAX, mx = 0;
    uint64_t rem = sent % t->n_entries;
    for (size_t i = 0; i < t->n_entries; i++) {
        const sg_payload_t *p = &t->items[i * t->n_variants];
        img_all += p->images;
        aud_all += p->audios;
        bytes_all += p->media_bytes;
        req_all += p->len;
        with += p->images || p->audios;
        mn = p->media_bytes < mn ? p->media_bytes : mn;
        mx = p->media_bytes > mx ? p->media_bytes : mx;
        if (i < rem) {
            img_part += p->images;
            aud_part += p->audios;
            bytes_part += p->media_bytes;
            req_part += p->len;
            with_part += p->images || p->audios;
        }
    }
    if (!with)
        return NULL;
    uint64_t cycles = sent / t->n_entries;
    uint64_t images = cycles * img_all + img_part, audios = cycles * aud_all + aud_part;
    uint64_t bytes = cycles * bytes_all + bytes_part, req_bytes = cycles * req_all + req_part;
    uint64_t distinct = cycles ? with : with_part;
    double n = sent ? (double)sent : 1;
    json_t *o = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:f, s:I, s:f}", "table_entries", (json_int_t)with,
        "requests", (json_int_t)sent, "images", (json_int_t)images, "audios", (json_int_t)audios, "media_bytes",
        (json_int_t)bytes, "images_per_request", (double)images / n, "audios_per_request", (double)audios / n,
        "media_bytes_per_request", (double)bytes / n, "media_bytes_per_request_min", (json_int_t)mn,
        "media_bytes_per_request_max", (json_int_t)mx, "media_share_of_request_bytes",
        req_bytes ? (double)bytes / (double)req_bytes : 0.0, "distinct_media_sets", (json_int_t)distinct,
        "sends_per_media_set", distinct ? (double)sent / (double)distinct : 0.0);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}
