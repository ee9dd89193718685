"""Images and audio in requests, checked at the server (surge mock --record reads each image's size from its PNG
or JPEG header and each clip's length from its WAV header):

1. synthetic images (AIPerf's --image-* flags) and audio (--audio-*) in chat requests: every request carries the
   images and clips asked for, each readable by the server, with the decoded bytes the client's summary implies;
   the server's usage adds the documented token counts (ceil(w/28) * ceil(h/28) per image, ceil(25 s) per clip)
   to the prompt's, per request; no two requests carry the same media (each table entry draws its own, and the
   table grows to the request count);
2. image_retrieval (GenAI-Perf's endpoint type): /v1/infer with {"input": [{"type": "image_url", "url": ...}]},
   JPEG here, answered by the mock as NIM does (one embedding per image);
3. an --input-file naming a local PNG, an https image URL and a local WAV: read and encoded before the run, the URL
   passed through;
4. bad input (a missing file, an unknown format, a negative size, a size alone, media with completions) stops with
   a message naming the problem before any request reaches the server.
"""

import json
import os
import struct
import sys
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from profiling import profile  # noqa: E402

N = 12


def png_file(path, w, h):
    raw = b"".join(b"\x00" + bytes(i % 256 for i in range(3 * w)) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)


def wav_file(path, rate, seconds):
    d = bytes(int(rate * seconds) * 2)  # 16-bit mono
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + len(d)) + b"WAVEfmt " +
                struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(d)) + d)


def image_tokens(w, h):
    return -(-w // 28) * -(-h // 28)


def main(h):
    # 1. synthetic images and audio in chat requests
    with h.mock("--ttft-ms", 0, "--output-tokens", 2, record=True) as m:
        r = profile(h, m.url, "--request-count", N, "--concurrency", 3, "--isl", 12, "--image-width-mean", 60,
                    "--image-height-mean", 40, "--image-batch-size", 2, "--image-format", "random",
                    "--audio-length-mean", 0.2, "--audio-sample-rates", "8,16", "--audio-depths", "8,16",
                    "--audio-num-channels", 2)
        with urllib.request.urlopen(m.url + "/metrics", timeout=10) as resp:
            scrape = dict(line.rsplit(" ", 1) for line in resp.read().decode().splitlines()
                          if line.startswith("surge_mock_"))
        m.stop()
        recs = m.records()
    h.check(len(recs) == N, "chat: %d requests reached the server" % N, len(recs))
    h.check(all(x.get("images") == 2 and x.get("images_sized") == 2 for x in recs),
            "chat: every request carries 2 images whose size the server read from their headers",
            [(x.get("images"), x.get("images_sized")) for x in recs])
    h.check(all(x.get("audios") == 1 and x.get("audios_timed") == 1 for x in recs),
            "chat: every request carries 1 clip whose length the server read from its WAV header",
            [(x.get("audios"), x.get("audios_timed")) for x in recs])
    want = 2 * image_tokens(60, 40) + 5  # 0.2 s at 25 tokens a second
    h.check(all(x.get("media_tokens") == want for x in recs), "chat: the server counts %d media tokens each" % want,
            sorted(set(x.get("media_tokens") for x in recs)))
    media = (r.summary or {}).get("media", {})
    h.check(media.get("images") == 2 * N and media.get("audios") == N and media.get("distinct_media_sets") == N and
            media.get("images_per_request") == 2.0, "chat: the summary's media object counts them", media)
    # the client counts the text sent (data URL prefixes, base64), the server the decoded bytes: 3/4 of the base64
    sent, got = media.get("media_bytes", 0), sum(x.get("media_bytes", 0) for x in recs)
    h.check(0.74 * sent <= got <= 0.75 * sent, "chat: the server decoded 3/4 of the media bytes the client reports",
            "server %d, client %d (%.4f)" % (got, sent, got / sent if sent else 0))
    h.check(scrape == {"surge_mock_images_total": str(2 * N), "surge_mock_audio_clips_total": str(N),
                       "surge_mock_media_bytes_total": str(got)}, "chat: the server's /metrics counts them too", scrape)
    h.check("Media: 2.00 images and 1.00 audio clips per request" in r.stdout, "chat: and the console says so",
            r.stdout[-800:])
    # each JSONL record says what its request carried: the summary's totals are their sums
    per = [(x.get("images"), x.get("audios"), x.get("media_bytes")) for x in r.records]
    h.check(len(per) == N and all(i == 2 and a == 1 and b > 0 for i, a, b in per) and
            sum(b for _, _, b in per) == sent, "chat: every JSONL record has images 2, audios 1, and media_bytes "
            "summing to the summary's %d" % sent, per[:4])
    # the server's usage adds the media tokens to the prompt's words, request by request
    isl = [(x["input_sequence_length"], x["input_sequence_length_server"]) for x in r.records]
    h.check(len(isl) == N and all(s == c + want for c, s in isl), "chat: usage prompt_tokens = ISL + media tokens",
            isl[:4])
    h.check(r.summary and r.summary["input_config"].get("media", {}).get("image_format") == "random",
            "chat: input_config echoes the media flags", (r.summary or {}).get("input_config", {}).get("media"))
    # surge merge of the run alone gives its media object back (over ranks the parts' objects are summed)
    out = h.path("merged")
    p = h.run([h.surge, "merge", r.dir, "-o", out, "-q"])
    merged = {}
    if p.returncode == 0:
        with open(os.path.join(out, "profile_export_surge.json")) as f:
            merged = json.load(f).get("media", {})
    h.check(p.returncode == 0 and merged == media, "merge: the media object survives", (p.returncode, merged, media))
    mrecs = []
    if p.returncode == 0:
        with open(os.path.join(out, "profile_export_surge.jsonl")) as f:
            mrecs = [json.loads(line) for line in f if line.strip()]
    h.check(sorted((x["id"], x.get("images"), x.get("audios"), x.get("media_bytes")) for x in mrecs) ==
            sorted((x["id"], x.get("images"), x.get("audios"), x.get("media_bytes")) for x in r.records),
            "merge: each record's media survive", mrecs[:2])

    # 2. image_retrieval, JPEG
    with h.mock("--ttft-ms", 0, record=True) as m:
        r = profile(h, m.url, "--endpoint-type", "image_retrieval", "--request-count", 4, "--concurrency", 2,
                    "--image-width-mean", 90, "--image-height-mean", 50, "--image-format", "jpeg",
                    "--image-batch-size", 3)
        m.stop()
        recs = m.records()
    h.check(len(recs) == 4 and all(x["path"] == "/v1/infer" and x.get("api") == "image_retrieval" for x in recs),
            "image_retrieval: 4 requests to /v1/infer", [(x["path"], x.get("api")) for x in recs])
    h.check(all(x.get("inputs") == 3 and x.get("images_sized") == 3 and
                x.get("media_tokens") == 3 * image_tokens(90, 50) for x in recs),
            "image_retrieval: 3 JPEG images each, sizes read by the server",
            [(x.get("inputs"), x.get("images_sized"), x.get("media_tokens")) for x in recs])
    h.check(r.summary and r.summary["request_count"]["avg"] == 4 and r.summary["error_request_count"]["avg"] == 0,
            "image_retrieval: 4 ok, none failed", (r.summary or {}).get("error_request_count"))
    h.check(len(r.records) == 4 and all(x.get("images") == 3 and x.get("audios") == 0 for x in r.records),
            "image_retrieval: each JSONL record has its 3 images", [(x.get("images"), x.get("audios"))
                                                                     for x in r.records])

    # 3. an input file naming media
    png, wav, lines = h.path("cat.png"), h.path("hi.wav"), h.path("media.jsonl")
    png_file(png, 100, 57)
    wav_file(wav, 16000, 1.0)
    with open(lines, "w") as f:
        f.write(json.dumps({"text": "describe this", "image": png}) + "\n")
        f.write(json.dumps({"text": "and these", "images": [png, "https://example.com/x.jpg"], "audio": wav}) + "\n")
    with h.mock("--ttft-ms", 0, "--output-tokens", 2, record=True) as m:
        r = profile(h, m.url, "--input-file", lines, "--request-count", 2, "--concurrency", 1)
        m.stop()
        recs = m.records()
    got = [(x.get("images"), x.get("images_sized"), x.get("audios"), x.get("media_tokens")) for x in recs]
    h.check(got == [(1, 1, 0, image_tokens(100, 57)), (2, 1, 1, image_tokens(100, 57) + 25)],
            "input file: the PNG read and encoded, the URL passed through, the WAV's second counted", got)
    by_payload = sorted((x["payload"], x.get("images"), x.get("audios")) for x in r.records)
    h.check(by_payload == [(0, 1, 0), (1, 2, 1)], "input file: each JSONL record has its line's images and audio",
            by_payload)
    url = "https://example.com/x.jpg"
    b64 = 4 * -(-os.path.getsize(png) // 3)
    mb = sorted((x["payload"], x.get("media_bytes")) for x in r.records)
    want_mb = len("data:image/png;base64,") + b64
    h.check(mb and mb[0][1] == want_mb and mb[1][1] > want_mb + len(url),
            "input file: media_bytes is the data URL's length (%d), more with the URL and the clip" % want_mb, mb)
    pngsize = os.path.getsize(png)
    h.check(recs and recs[0].get("media_bytes") == pngsize, "input file: the server decoded the file's bytes",
            (recs[0].get("media_bytes") if recs else None, pngsize))

    # 4. bad input: a message and a non-zero exit before any request
    with open(h.path("missing.jsonl"), "w") as f:
        f.write(json.dumps({"text": "x", "image": h.path("none.png")}) + "\n")
    bad = [
        (("--input-file", h.path("missing.jsonl")), "none.png: No such file"),
        (("--image-width-mean", 8, "--image-height-mean", 8, "--image-format", "gif"), "png, jpeg or random"),
        (("--image-width-mean", -8, "--image-height-mean", 8), "expected a number from 0"),
        (("--image-width-mean", 8), "need both --image-width-mean and --image-height-mean"),
        (("--audio-length-mean", 1, "--audio-format", "mp3"), "WAV only"),
        (("--audio-num-channels", 2), "needs --audio-length-mean above 0"),
        (("--image-width-mean", 8, "--image-height-mean", 8, "--endpoint-type", "completions"), "not in completions"),
        (("--endpoint-type", "image_retrieval"), "image_retrieval sends images"),
    ]
    with h.mock("--ttft-ms", 0, record=True) as m:
        for args, says in bad:
            r = profile(h, m.url, "--request-count", 2, *args, check_rc=None)
            h.check(r.rc != 0 and says in r.stderr, "refused: %s" % " ".join(map(str, args)),
                    (r.rc, r.stderr[-400:]))
        m.stop()
        h.check(m.records() == [], "nothing reached the server", len(m.records()))


if __name__ == "__main__":
    harness.main(main)
