/*
 * Images and audio in requests (docs/workloads.md, "Images and audio"): synthetic images of random noise (PNG
 * through libpng, JPEG through libjpeg-turbo) and synthetic audio (WAV, PCM written here), or files and URLs an
 * input file names, each encoded once before the run into the text a request body carries: a data URL for an
 * image ("data:image/png;base64,..."), base64 for an audio clip. Nothing here runs on the hot path.
 *
 * The flags are AIPerf's: --image-width-mean/-stddev, --image-height-mean/-stddev, --image-format, --image-batch-size,
 * --audio-length-mean/-stddev, --audio-format, --audio-sample-rates, --audio-depths, --audio-num-channels,
 * --audio-batch-size. As in AIPerf, images are on when both size means are above 0, audio when its length mean is.
 */
#ifndef SG_MEDIA_H
#define SG_MEDIA_H

#include "sg_common.h"

struct sg_rng;

typedef enum {
    SG_IMG_PNG = 0,
    SG_IMG_JPEG,
    SG_IMG_RANDOM, /* PNG or JPEG, drawn per image */
} sg_img_format_t;

#define SG_MEDIA_MAX_RATES 8
#define SG_MEDIA_MAX_DEPTHS 4
#define SG_MEDIA_MAX_SIDE 16384     /* pixels: a drawn width or height is capped here */
#define SG_MEDIA_MAX_AUDIO_S 3600.0 /* seconds: a drawn length is capped here */
#define SG_MEDIA_MAX_BATCH 64       /* images or clips in one request */
#define SG_MEDIA_JPEG_QUALITY 85

typedef struct {
    double image_w_mean, image_w_stddev, image_h_mean, image_h_stddev; /* pixels */
    uint32_t image_batch;                                              /* images per request (default 1) */
    sg_img_format_t image_format;
    double audio_len_mean, audio_len_stddev;  /* seconds */
    uint32_t audio_batch;                     /* clips per request (default 1) */
    uint32_t audio_rates[SG_MEDIA_MAX_RATES]; /* Hz, one drawn per clip (default 16000) */
    uint32_t n_rates;
    uint32_t audio_depths[SG_MEDIA_MAX_DEPTHS]; /* bits per sample: 8, 16, 24 or 32, one drawn per clip (16) */
    uint32_t n_depths;
    uint32_t audio_channels; /* 1 or 2 */
    const char *first_flag;  /* the first media flag given (for messages), NULL when none */
    const char *image_flag;  /* the first --image-* flag given other than the batch size or a mean of 0, or NULL */
    const char *audio_flag;  /* the same for --audio-* */
} sg_media_spec_t;

void sg_media_defaults(sg_media_spec_t *m);
/* Images / audio asked for: both size means above 0 / a length mean above 0. */
bool sg_media_images(const sg_media_spec_t *m);
bool sg_media_audio(const sg_media_spec_t *m);
/*
 * One media flag, by its long name without the dashes ("image-width-mean"): 1 when name is not a media flag, 0
 * when taken, SG_EINVAL with a message in err (naming the problem and what was given) when arg is bad.
 */
SG_WUR int sg_media_option(sg_media_spec_t *m, const char *name, const char *arg, char *err, size_t errlen);

/* One image or audio clip as a request carries it. */
typedef enum {
    SG_MEDIA_IMAGE = 0,
    SG_MEDIA_AUDIO = 1,
} sg_media_kind_t;

typedef struct {
    char *text; /* image: a data URL, or an http(s) URL passed through; audio: base64 of the file. Owned. */
    size_t len;
    uint8_t kind;   /* sg_media_kind_t */
    char fmt[8];    /* "png", "jpeg", "wav", "mp3", ... ("url" for an image sent by URL) */
    bool plain;     /* text is base64 (after a data URL's prefix): JSON carries it as it is, no escape needed */
    uint32_t w, h;  /* synthetic images: size in pixels (0 otherwise) */
    double seconds; /* synthetic audio: length (0 otherwise) */
} sg_media_item_t;

void sg_media_item_free(sg_media_item_t *it);

/* Draw and encode one synthetic image / clip of the spec with rng. 0, or negative with err. */
SG_WUR int sg_media_synth_image(const sg_media_spec_t *m, struct sg_rng *rng, sg_media_item_t *out, char *err,
                                size_t errlen);
SG_WUR int sg_media_synth_audio(const sg_media_spec_t *m, struct sg_rng *rng, sg_media_item_t *out, char *err,
                                size_t errlen);
/*
 * An image or clip an input file names: an http(s) URL (images only: passed through), a data URL (images: passed
 * through), or a local path, read and base64-encoded (its format from its first bytes: PNG, JPEG, GIF, WebP for
 * images; WAV or MP3 for audio). 0, or negative with err naming the file and the problem.
 */
SG_WUR int sg_media_from_ref(const char *ref, size_t ref_len, sg_media_kind_t kind, sg_media_item_t *out, char *err,
                             size_t errlen);

/* Encoders (memory in, malloc'd memory out; 0 or negative). rgb is w*h*3 bytes. */
SG_WUR int sg_png_encode(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out, size_t *out_len);
SG_WUR int sg_jpeg_encode(const uint8_t *rgb, uint32_t w, uint32_t h, int quality, uint8_t **out, size_t *out_len);
/* A WAV file (RIFF, PCM format 1, little-endian) of frames frames of uniform noise. depth 8 (unsigned), 16, 24
 * or 32 (signed). */
SG_WUR int sg_wav_encode(struct sg_rng *rng, uint32_t rate, uint32_t depth, uint32_t channels, uint64_t frames,
                         uint8_t **out, size_t *out_len);
/* Standard base64 (RFC 4648, padded, no line breaks) of n bytes after a prefix of plen bytes, NUL-terminated;
 * malloc'd, *out_len without the NUL. NULL on OOM. */
char *sg_base64(const char *prefix, size_t plen, const uint8_t *in, size_t n, size_t *out_len);

#endif
