/* Probing base64 images and audio in request bodies (sg_media_probe.h). */
#include "sg_media_probe.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len;    /* characters, a multiple of 4 */
    uint64_t size; /* decoded bytes */
} b64_t;

static int val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static bool b64_init(b64_t *b, const char *s, size_t len)
{
    /* JSON may escape '/' as "\/": such text cannot be read by position; it counts as unknown */
    if (len < 4 || len % 4 || memchr(s, '\\', len))
        return false;
    size_t pad = (s[len - 1] == '=') + (s[len - 2] == '=');
    b->s = s;
    b->len = len;
    b->size = len / 4 * 3 - pad;
    return true;
}

/* Byte k of the decoded file, or -1 past its end or on a bad character. */
static int byte_at(const b64_t *b, uint64_t k)
{
    if (k >= b->size)
        return -1;
    const char *q = b->s + k / 3 * 4;
    int v[4];
    for (int i = 0; i < 4; i++)
        v[i] = q[i] == '=' ? 0 : val((unsigned char)q[i]);
    if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
        return -1;
    uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    return (int)((x >> (16 - 8 * (k % 3))) & 0xff);
}

static int64_t be(const b64_t *b, uint64_t k, int n)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        int c = byte_at(b, k + (uint64_t)i);
        if (c < 0)
            return -1;
        v = v << 8 | c;
    }
    return v;
}

static int64_t le(const b64_t *b, uint64_t k, int n)
{
    int64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        int c = byte_at(b, k + (uint64_t)i);
        if (c < 0)
            return -1;
        v = v << 8 | c;
    }
    return v;
}

static bool match(const b64_t *b, uint64_t k, const char *lit, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (byte_at(b, k + i) != (unsigned char)lit[i])
            return false;
    return true;
}

static void probe_png(const b64_t *b, sg_media_info_t *out)
{
    /* signature, then the IHDR chunk: length, "IHDR", width, height (big-endian) */
    if (!match(b, 0, "\x89PNG\r\n\x1a\n", 8) || !match(b, 12, "IHDR", 4))
        return;
    int64_t w = be(b, 16, 4), h = be(b, 20, 4);
    if (w <= 0 || h <= 0 || w > UINT32_MAX || h > UINT32_MAX)
        return;
    out->w = (uint32_t)w;
    out->h = (uint32_t)h;
    out->known = true;
}

static void probe_jpeg(const b64_t *b, sg_media_info_t *out)
{
    uint64_t pos = 2;
    for (int seg = 0; seg < 1000; seg++) {
        if (byte_at(b, pos) != 0xff)
            return;
        int m = byte_at(b, pos + 1);
        while (m == 0xff) /* fill bytes */
            m = byte_at(b, ++pos + 1);
        if (m < 0)
            return;
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) { /* markers without a length */
            pos += 2;
            continue;
        }
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) { /* SOFn: P, Y (height), X (width) */
            int64_t h = be(b, pos + 5, 2), w = be(b, pos + 7, 2);
            if (w <= 0 || h <= 0)
                return;
            out->w = (uint32_t)w;
            out->h = (uint32_t)h;
            out->known = true;
            return;
        }
        int64_t seglen = be(b, pos + 2, 2);
        if (seglen < 2)
            return;
        pos += 2 + (uint64_t)seglen;
    }
}

void sg_media_probe_image_url(const char *url, size_t len, sg_media_info_t *out)
{
    memset(out, 0, sizeof *out);
    if (len < 5 || strncmp(url, "data:", 5) != 0)
        return;
    const char *comma = memchr(url, ',', len);
    if (!comma)
        return;
    b64_t b;
    if (!b64_init(&b, comma + 1, len - (size_t)(comma + 1 - url)))
        return;
    out->bytes = b.size;
    if (byte_at(&b, 0) == 0x89)
        probe_png(&b, out);
    else if (byte_at(&b, 0) == 0xff && byte_at(&b, 1) == 0xd8)
        probe_jpeg(&b, out);
}

void sg_media_probe_audio(const char *s, size_t len, sg_media_info_t *out)
{
    memset(out, 0, sizeof *out);
    b64_t b;
    if (!b64_init(&b, s, len))
        return;
    out->bytes = b.size;
    if (!match(&b, 0, "RIFF", 4) || !match(&b, 8, "WAVE", 4))
        return;
    int64_t byte_rate = -1, data = -1;
    uint64_t pos = 12;
    for (int i = 0; i < 64 && (byte_rate < 0 || data < 0); i++) {
        int64_t size = le(&b, pos + 4, 4);
        if (size < 0)
            return;
        if (match(&b, pos, "fmt ", 4))
            byte_rate = le(&b, pos + 8 + 8, 4);
        else if (match(&b, pos, "data", 4))
            data = size;
        pos += 8 + (uint64_t)size + ((uint64_t)size & 1);
    }
    if (byte_rate <= 0 || data < 0)
        return;
    out->seconds = (double)data / (double)byte_rate;
    out->known = true;
}

uint64_t sg_media_image_tokens(uint32_t w, uint32_t h)
{
    return ((uint64_t)w + SG_MEDIA_PATCH - 1) / SG_MEDIA_PATCH * (((uint64_t)h + SG_MEDIA_PATCH - 1) / SG_MEDIA_PATCH);
}

uint64_t sg_media_audio_tokens(double seconds)
{
    return seconds > 0 ? (uint64_t)ceil(seconds * SG_MEDIA_AUDIO_TOKENS_PER_S - 1e-9) : 0;
}
