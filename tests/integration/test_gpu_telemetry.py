"""GPU telemetry (--gpu-telemetry, AIPerf's flag) against a recorded-style DCGM exporter: a small HTTP server on
127.0.0.1 serves dcgm-exporter's text exposition for two GPUs (its default counters, its labels), the gauges moving
and the energy counter (mJ) advancing with every scrape, and logs what it served. The summary's gpu_telemetry must
hold exactly what was served: per GPU the utilisation's mean and max, memory used's max, power's mean, SM clock's
mean, the energy as the counter's last minus first value in J, and tokens per joule as the run's output tokens over
the GPUs' energy; the console prints the same; the report draws the GPU charts and table. Without the energy
counter the energy is the power gauge integrated between the scrapes' times (server_metrics.json has them). A
URL without scheme or path is DCGM's /metrics; pynvml is refused."""
# ctest: run-serial (headless Chromium takes both cores for seconds: the timing tests beside it would suffer)
# ctest: one-backend (the scrape and the summary, not the I/O, are under test)
import http.server
import json
import os
import re
import threading

import browser
import harness
from profiling import profile

GPUS = (
    {"gpu": "0", "UUID": "GPU-5f0c8a3e-92b1-4d7e-a1c0-3b9f6e2d7a41", "pci_bus_id": "00000000:18:00.0",
     "device": "nvidia0"},
    {"gpu": "1", "UUID": "GPU-c41d77b2-0e6a-4f38-9d25-8a7e1f0b6c93", "pci_bus_id": "00000000:2A:00.0",
     "device": "nvidia1"},
)
COMMON = {"modelName": "NVIDIA H100 80GB HBM3", "Hostname": "dgx-node-07", "DCGM_FI_DRIVER_VERSION": "550.90.07"}

# dcgm-exporter's default-counters.csv order, with its HELP texts and types
FIELDS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
)


class Exporter:
    """Serves the exposition; scrape k (0-based) of GPU g has values that are a function of (k, g), logged."""

    def __init__(self, energy=True):
        self.energy = energy
        self.served = []  # per scrape: {gpu index: {field: value}}
        self.lock = threading.Lock()
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def values(self, k, g):
        """What scrape k says of GPU g: gauges that move, a counter that advances by (power x ~0.2 s) each time."""
        power = 312.25 + 40.5 * g + 7.125 * (k % 5)
        return {
            "DCGM_FI_DEV_SM_CLOCK": 1980 - 15 * ((k + g) % 3),
            "DCGM_FI_DEV_MEM_CLOCK": 2619,
            "DCGM_FI_DEV_MEMORY_TEMP": 41 + g,
            "DCGM_FI_DEV_GPU_TEMP": 52 + (k % 4) + g,
            "DCGM_FI_DEV_POWER_USAGE": power,
            # since boot: a large base, then whole mJ per scrape, as the exporter reports it
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 7340032123 + 1000000 * g + sum(
                int((312.25 + 40.5 * g + 7.125 * (j % 5)) * 200) for j in range(k)),
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
            "DCGM_FI_DEV_GPU_UTIL": (37 + 11 * k + 5 * g) % 101,
            "DCGM_FI_DEV_MEM_COPY_UTIL": 12 + (k % 7),
            "DCGM_FI_DEV_ENC_UTIL": 0,
            "DCGM_FI_DEV_DEC_UTIL": 0,
            "DCGM_FI_DEV_XID_ERRORS": 0,
            "DCGM_FI_DEV_FB_FREE": 81559 - (66000 + 97 * k + 13 * g),
            "DCGM_FI_DEV_FB_USED": 66000 + 97 * k + 13 * g,
        }

    def render(self):
        with self.lock:
            k = len(self.served)
            vals = {g: self.values(k, g) for g in range(len(GPUS))}
            if not self.energy:
                for v in vals.values():
                    del v["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
            self.served.append(vals)
        out = []
        for name, typ, help_ in FIELDS:
            if name not in vals[0]:
                continue
            out.append("# HELP %s %s" % (name, help_))
            out.append("# TYPE %s %s" % (name, typ))
            for g, labels in enumerate(GPUS):
                lab = dict(labels)
                lab.update(COMMON)
                text = ",".join('%s="%s"' % (a, b) for a, b in lab.items())
                v = vals[g][name]
                out.append("%s{%s} %s" % (name, text, repr(v) if isinstance(v, float) else v))
        return "\n".join(out) + "\n"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def near(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def pct(values, q):
    """numpy's default percentile (linear between ranks), as AIPerf computes its GPU gauges' and surge copies."""
    v = sorted(values)
    pos = q / 100 * (len(v) - 1)
    lo = int(pos)
    return v[-1] if lo + 1 >= len(v) else v[lo] + (v[lo + 1] - v[lo]) * (pos - lo)


def std(values):
    m = sum(values) / len(values)
    return (sum((x - m) ** 2 for x in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0


# AIPerf's keys for DCGM's fields (its gpu_telemetry/constants.py) with its scale from DCGM's units
AIPERF_GAUGES = (("gpu_power_usage", "DCGM_FI_DEV_POWER_USAGE", 1, "W"),
                 ("gpu_utilization", "DCGM_FI_DEV_GPU_UTIL", 1, "%"),
                 ("gpu_memory_used", "DCGM_FI_DEV_FB_USED", 1.048576e-3, "GB"),
                 ("gpu_temperature", "DCGM_FI_DEV_GPU_TEMP", 1, "\u00b0C"),
                 ("mem_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL", 1, "%"),
                 ("encoder_utilization", "DCGM_FI_DEV_ENC_UTIL", 1, "%"),
                 ("decoder_utilization", "DCGM_FI_DEV_DEC_UTIL", 1, "%"))


def check_aiperf(h, r, served, port):
    """profile_export_aiperf.json's telemetry_data and totals, and its CSV's GPU table, from what was served."""
    with open(os.path.join(r.dir, "profile_export_aiperf.json")) as f:
        a = json.load(f)
    t = a.get("telemetry_data") or {}
    ep = "127.0.0.1:%d" % port
    url = "http://127.0.0.1:%d/metrics" % port
    h.check(t.get("summary", {}).get("endpoints_configured") == [url] and
            t.get("summary", {}).get("endpoints_successful") == [url] and t["summary"].get("start_time"),
            "AIPerf: telemetry_data.summary names the exporter", t.get("summary"))
    gpus = t.get("endpoints", {}).get(ep, {}).get("gpus", {})
    h.check(sorted(gpus) == ["gpu_0", "gpu_1"], "AIPerf: the endpoint %s holds gpu_0 and gpu_1" % ep,
            sorted(t.get("endpoints", {})))
    n = len(served)
    for gi, want in enumerate(GPUS):
        g = gpus.get("gpu_%d" % gi, {})
        h.check(g.get("gpu_index") == gi and g.get("gpu_uuid") == want["UUID"] and
                g.get("gpu_name") == COMMON["modelName"] and g.get("hostname") == COMMON["Hostname"],
                "AIPerf: GPU %d's identity" % gi, {k: v for k, v in g.items() if k != "metrics"})
        m = g.get("metrics", {})
        for key, field, scale, unit in AIPERF_GAUGES:
            col = [s[gi][field] * scale for s in served]
            b = m.get(key, {})
            ok = b.get("unit") == unit and b.get("count") == n and near(b.get("avg", -1), sum(col) / n)
            ok = ok and near(b.get("min", -1), min(col)) and near(b.get("max", -1), max(col))
            ok = ok and all(near(b.get("p%d" % q, -1), pct(col, q)) for q in (1, 5, 10, 25, 50, 75, 90, 95, 99))
            ok = ok and near(b.get("std", -1), std(col)) and near(b.get("sum", -1), sum(col))
            h.check(ok, "AIPerf: GPU %d %s is the served %s x %g" % (gi, key, field, scale), (b, col))
        e = [s[gi]["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] for s in served]
        ec = m.get("energy_consumption", {})
        h.check(ec.get("unit") == "MJ" and near(ec.get("avg", -1), (e[-1] - e[0]) * 1e-9) and "p50" not in ec,
                "AIPerf: GPU %d energy_consumption, a counter, in MJ" % gi, ec)
        h.check(m.get("xid_errors") == {"unit": "count", "avg": 0.0}, "AIPerf: GPU %d xid_errors 0" % gi,
                m.get("xid_errors"))
        h.check("sm_utilization" not in m, "AIPerf: no sm_utilization where DCGM_FI_PROF_SM_ACTIVE is not exported",
                sorted(m))
    gt = r.summary["gpu_telemetry"]
    power = sum(x["gpu_power"]["avg"] for x in gt["gpus"])
    h.check(a.get("total_gpu_power") == {"unit": "W", "avg": power} and
            a.get("total_gpu_energy") == {"unit": "J", "avg": gt["energy_j"]} and
            a.get("output_tokens_per_joule") == {"unit": "tokens/J", "avg": gt["tokens_per_joule"]},
            "AIPerf: total_gpu_power, total_gpu_energy, output_tokens_per_joule", (a.get("total_gpu_power"),
                                                                                   a.get("total_gpu_energy"),
                                                                                   a.get("output_tokens_per_joule")))
    with open(os.path.join(r.dir, "profile_export_aiperf.csv")) as f:
        text = f.read()
    head = "Endpoint,GPU_Index,GPU_Name,GPU_UUID,Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std,Hostname"
    h.check("\n\n\n" + head + "\n" in text, "AIPerf CSV: two blank lines, then the GPU table's header", text[-3000:])
    rows = [line.split(",") for line in text.split(head + "\n", 1)[-1].splitlines() if line]
    power_rows = [x for x in rows if x[4] == "GPU Power Usage (W)"]
    h.check(len(rows) == 2 * 9 and len(power_rows) == 2 and all(x[0] == ep and x[-1] == COMMON["Hostname"]
                                                                 for x in rows),
            "AIPerf CSV: 9 metrics for each of the 2 GPUs", rows[:3])
    for x in power_rows:
        b = gpus["gpu_%s" % x[1]]["metrics"]["gpu_power_usage"]
        h.check(x[5] == "%.2f" % b["avg"] and x[16] == "%.2f" % b["p99"], "AIPerf CSV: GPU %s power avg and p99" % x[1],
                (x, b))


def main(h):
    with h.mock("--ttft-ms", 10, "--itl-ms", 2, "--output-tokens", 24) as m:
        with Exporter() as ex:
            # a URL without scheme and path: DCGM's http://HOST:PORT/metrics
            r = profile(h, m.url, "--streaming", "--concurrency", 4, "--request-count", 120,
                        "--gpu-telemetry", "127.0.0.1:%d" % ex.port, "--server-metrics-interval", 0.2,
                        "--generate-plots")
            served = list(ex.served)
        g = r.summary.get("gpu_telemetry")
        h.check(isinstance(g, dict) and g.get("gpu_count") == 2, "the summary has gpu_telemetry for two GPUs",
                r.summary and r.summary.get("gpu_telemetry"))
        n = len(served)
        scrapes = r.summary["server_metrics"]["endpoints"][0]["scrapes"]
        h.check(n >= 3 and scrapes == n, "every scrape served once: %d" % n, (n, scrapes))
        h.check(r.summary["server_metrics"]["endpoints"][0]["url"] == "http://127.0.0.1:%d/metrics" % ex.port,
                "localhost:PORT is http://...:PORT/metrics", r.summary["server_metrics"]["endpoints"][0]["url"])
        total_j = 0
        for gi, want in enumerate(GPUS):
            gg = g["gpus"][gi]
            col = lambda f: [s[gi][f] for s in served]  # noqa: E731
            h.check(gg["gpu"] == want["gpu"] and gg["uuid"] == want["UUID"] and
                    gg["model_name"] == COMMON["modelName"] and gg["hostname"] == COMMON["Hostname"],
                    "GPU %d: its labels" % gi, gg)
            e = col("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
            want_j = (e[-1] - e[0]) / 1000.0
            total_j += want_j
            h.check(gg["energy"]["source"] == "energy_counter" and near(gg["energy"]["value"], want_j),
                    "GPU %d: energy is the counter's last minus first, in J" % gi, (gg["energy"], want_j))
            util = col("DCGM_FI_DEV_GPU_UTIL")
            h.check(near(gg["gpu_utilization"]["avg"], sum(util) / n) and gg["gpu_utilization"]["max"] == max(util),
                    "GPU %d: utilisation mean and max as served" % gi, (gg["gpu_utilization"], util))
            pw = col("DCGM_FI_DEV_POWER_USAGE")
            h.check(near(gg["gpu_power"]["avg"], sum(pw) / n) and gg["gpu_power"]["unit"] == "W",
                    "GPU %d: power mean as served" % gi, (gg["gpu_power"], pw))
            h.check(gg["gpu_memory_used"]["max"] == max(col("DCGM_FI_DEV_FB_USED")) and
                    gg["gpu_memory_used"]["unit"] == "MiB", "GPU %d: memory used max" % gi, gg["gpu_memory_used"])
            clk = col("DCGM_FI_DEV_SM_CLOCK")
            h.check(near(gg["gpu_sm_clock"]["avg"], sum(clk) / n), "GPU %d: SM clock mean" % gi, gg["gpu_sm_clock"])
            h.check(gg["gpu_temperature"]["max"] == max(col("DCGM_FI_DEV_GPU_TEMP")), "GPU %d: temperature max" % gi,
                    gg["gpu_temperature"])
        out_tokens = sum(x["output_sequence_length"] for x in r.records if x["status"] == "ok")
        h.check(g["output_tokens"] == out_tokens == 120 * 24, "output tokens: the ok requests' OSL summed",
                (g["output_tokens"], out_tokens))
        h.check(near(g["energy_j"], total_j) and g["energy_source"] == "energy_counter", "energy: both GPUs'",
                (g["energy_j"], total_j))
        h.check(near(g["tokens_per_joule"], out_tokens / total_j), "tokens per joule: output tokens / energy",
                (g["tokens_per_joule"], out_tokens / total_j))
        # the gauges beyond the default six (AIPerf's), with a distribution each; no SM-active series was served
        for gi in range(2):
            gg = g["gpus"][gi]
            for known, field in (("gpu_memory_copy_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL"),
                                 ("gpu_encoder_utilization", "DCGM_FI_DEV_ENC_UTIL"),
                                 ("gpu_decoder_utilization", "DCGM_FI_DEV_DEC_UTIL"),
                                 ("gpu_xid_errors", "DCGM_FI_DEV_XID_ERRORS"), ("gpu_power", "DCGM_FI_DEV_POWER_USAGE")):
                col = [s[gi][field] for s in served]
                x = gg.get(known) or {}
                h.check(x.get("samples") == n and near(x.get("avg", -1), sum(col) / n) and
                        near(x.get("p90", -1), pct(col, 90)) and near(x.get("std", -1), std(col)) and
                        x.get("first") == col[0] and x.get("last") == col[-1],
                        "GPU %d: %s as served, with its percentiles and std" % (gi, known), (x, col))
            h.check(gg.get("gpu_sm_active", 0) is None, "GPU %d: gpu_sm_active null (not exported)" % gi,
                    gg.get("gpu_sm_active"))
        check_aiperf(h, r, served, ex.port)
        # the console says the same
        h.check("GPU telemetry (DCGM exporter, 2 GPUs; energy from the energy counter)" in r.stdout and
                re.search(r"Output tokens per joule: %s " % re.escape("%.4g" % (out_tokens / total_j)), r.stdout),
                "the console's GPU section and tokens per joule", r.stdout[-2500:])
        # the generic summary does not add two GPUs' utilisation together; the series keep their known names
        h.check(not any(k.startswith("gpu_") for k in r.summary["server_metrics"]["endpoints"][0]["metrics"]),
                "server_metrics does not sum the GPUs", r.summary["server_metrics"]["endpoints"][0]["metrics"])
        with open(os.path.join(r.dir, "server_metrics.json")) as f:
            sm = json.load(f)
        known = {s["known"] for s in sm["series"] if s["known"]}
        h.check({"gpu_utilization", "gpu_memory_used", "gpu_memory_free", "gpu_power", "gpu_sm_clock", "gpu_energy",
                 "gpu_temperature"} <= known, "server_metrics.json: the DCGM series are known", sorted(known))
        # the report: a chart per GPU gauge (a line per GPU), and the table's figures the summary's own
        rp = browser.render(h, os.path.join(r.dir, "report.html"))
        if browser.page_ok(h, rp, "report with GPU telemetry", ("server-gpu_utilization", "server-gpu_power",
                                                                 "server-gpu_memory_used", "server-gpu_sm_clock")):
            for gi in range(2):
                gg = g["gpus"][gi]
                for field, v in (("util_avg", gg["gpu_utilization"]["avg"]), ("util_max", gg["gpu_utilization"]["max"]),
                                 ("mem_used_max", gg["gpu_memory_used"]["max"]), ("power_avg", gg["gpu_power"]["avg"]),
                                 ("energy_j", gg["energy"]["value"]), ("sm_clock_avg", gg["gpu_sm_clock"]["avg"]),
                                 ("temp_max", gg["gpu_temperature"]["max"]), ("power_max", gg["gpu_power"]["max"]),
                                 ("mem_free_min", gg["gpu_memory_free"]["min"]),
                                 ("mem_copy_util_avg", gg["gpu_memory_copy_utilization"]["avg"]),
                                 ("enc_util_avg", gg["gpu_encoder_utilization"]["avg"]),
                                 ("dec_util_avg", gg["gpu_decoder_utilization"]["avg"]),
                                 ("xid_last", gg["gpu_xid_errors"]["last"])):
                    cells = rp.cells(gpu=gi, field=field)
                    h.check(len(cells) == 1 and browser.same_number(cells[0][1], v) and
                            float(cells[0][0]["data-value"]) == v, "report: GPU %d %s is the summary's" % (gi, field),
                            (cells, v))
            h.check("output tokens per joule" in rp.dom, "report: tokens per joule said", rp.dom[-500:])
            h.check(not rp.cells(gpu=0, field="sm_active_avg"), "report: no SM-active column when no GPU has it")

        # no energy counter: the power gauge integrated between the scrapes (trapezoids over server_metrics.json's
        # times, which are the scrapes' times on surge's clock)
        with Exporter(energy=False) as ex:
            r = profile(h, m.url, "--streaming", "--concurrency", 2, "--request-count", 40,
                        "--gpu-telemetry", "http://127.0.0.1:%d/metrics" % ex.port, "--server-metrics-interval", 0.2)
            served = list(ex.served)
        g = r.summary.get("gpu_telemetry") or {}
        with open(os.path.join(r.dir, "server_metrics.json")) as f:
            sm = json.load(f)
        total_j = 0
        for gi in range(2):
            s = [x for x in sm["series"] if x["name"] == "DCGM_FI_DEV_POWER_USAGE" and x["labels"]["gpu"] == str(gi)]
            pts = s[0]["samples"] if s else []
            h.check([v for _, v in pts] == [sv[gi]["DCGM_FI_DEV_POWER_USAGE"] for sv in served],
                    "GPU %d: the power samples are what was served" % gi, pts)
            want = sum((a[1] + b[1]) / 2 * (b[0] - a[0]) for a, b in zip(pts, pts[1:]))
            total_j += want
            e = g["gpus"][gi]["energy"] if g.get("gpus") else None
            # the file's times are rounded to 7 digits; the summary's come from the nanoseconds
            h.check(e and e["source"] == "power_integral" and abs(e["value"] - want) <= 1e-4 * want,
                    "GPU %d: energy is the power integrated" % gi, (e, want))
        h.check(g.get("energy_source") == "power_integral" and abs(g["tokens_per_joule"] - 40 * 24 / total_j) <=
                1e-4 * (40 * 24 / total_j), "tokens per joule from the integrated power", g)

        # pynvml is AIPerf's local mode: surge reads DCGM exporters only; a bad URL is refused before the run
        r = profile(h, m.url, "--gpu-telemetry", "pynvml", check_rc=2)
        h.check(r.stderr.startswith("surge: --gpu-telemetry: pynvml is not supported"), "pynvml refused", r.stderr)
        r = profile(h, m.url, "--gpu-telemetry", "https://127.0.0.1:9400", check_rc=2)
        h.check(r.stderr.startswith("surge: --gpu-telemetry: https is not supported"), "https refused", r.stderr)


if __name__ == "__main__":
    harness.main(main)
