/*
 * What an image or an audio clip in a request body is, read from its base64 text without decoding it whole:
 * the mock server's side of images and audio (docs/mock.md, "Images and audio"). Sans-I/O, no allocation; the
 * base64 is read by random access (byte k of the file is in characters 4*(k/3) .. 4*(k/3)+3), so finding a
 * JPEG's frame header or a WAV's chunks costs a few dozen characters, whatever the size.
 */
#ifndef SG_MEDIA_PROBE_H
#define SG_MEDIA_PROBE_H

#include "sg_common.h"

typedef struct {
    uint64_t bytes; /* decoded size of the file (0 when the text is not base64) */
    uint32_t w, h;  /* images: size in pixels from the PNG or JPEG header; 0 when unknown */
    double seconds; /* audio: a WAV's data chunk over its byte rate; 0 when unknown */
    bool known;     /* the header was read (PNG, JPEG, or WAV) */
} sg_media_info_t;

/*
 * An image part's URL: a data URL "data:image/...;base64,<data>" is probed (PNG IHDR, JPEG SOFn); anything else
 * (an http URL) is counted as an image of unknown size. Never fails.
 */
void sg_media_probe_image_url(const char *url, size_t len, sg_media_info_t *out);
/* An input_audio part's base64 data: a WAV file's length (RIFF fmt and data chunks); other formats unknown. */
void sg_media_probe_audio(const char *b64, size_t len, sg_media_info_t *out);

/* The mock's token counts: an image of w x h pixels is ceil(w/28) * ceil(h/28) tokens (one per 28-pixel patch,
 * as Qwen2-VL's 14-pixel patches merged 2x2), an unknown one 0; audio ceil(seconds * 25) (25 tokens a second, as
 * Qwen2-Audio's encoder gives). */
#define SG_MEDIA_PATCH 28
#define SG_MEDIA_AUDIO_TOKENS_PER_S 25
uint64_t sg_media_image_tokens(uint32_t w, uint32_t h);
uint64_t sg_media_audio_tokens(double seconds);

#endif
