"""What AIPerf's readers require of a run directory, re-implemented with the standard library only (AIPerf cannot be
pip-installed here). Each check names the file in AIPerf's repository (github.com/ai-dynamo/aiperf, src/ layout,
2026) or llm-d-benchmark's (github.com/llm-d/llm-d-benchmark) it comes from. A reader that would raise raises
LoaderError here; the checks are the parse path, not a copy of it.

Used by test_aiperf_export.py on surge's files and on the peer fixtures in tests/data/peers/.
"""

import json
import os

JSONL = "profile_export.jsonl"  # src/aiperf/plot/constants.py PROFILE_EXPORT_JSONL
AGGREGATE = "profile_export_aiperf.json"  # PROFILE_EXPORT_AIPERF_JSON
CSV = "profile_export_aiperf.csv"  # PROFILE_EXPORT_AIPERF_CSV

# src/aiperf/common/metric_records_wire.py MetricRecordMetadata: the plot loader builds it with
# MetricRecordMetadata(**metadata) (msgspec.Struct), so a key outside this set is a TypeError and the line is skipped.
METADATA_FIELDS = {
    "request_num": (int, None), "session_num": (int,), "x_request_id": (str, None), "x_correlation_id": (str, None),
    "conversation_id": (str, None), "turn_index": (int, None), "credit_issued_ns": (int, None),
    "credit_received_ns": (int, None), "request_start_ns": (int,), "request_ack_ns": (int, None),
    "request_end_ns": (int,), "worker_id": (str,), "record_processor_id": (str,), "benchmark_phase": (str,),
    "was_cancelled": (bool,), "cancellation_time_ns": (int, None), "clock_offset_ns": (int, None),
}
# Required there and in src/aiperf/common/models/record_models.py MetricRecordMetadata (pydantic, Field(...)).
METADATA_REQUIRED = {"session_num", "request_start_ns", "request_end_ns", "worker_id", "record_processor_id",
                     "benchmark_phase"}
CREDIT_PHASES = {"warmup", "profiling"}  # src/aiperf/common/enums CreditPhase
# src/aiperf/common/models/error_models.py ErrorDetails: a slotted dataclass with extra="forbid", message required
ERROR_FIELDS = {"message": (str,), "code": (int, None), "type": (str, None), "cause": (str, None),
                "cause_chain": (list, None), "details": (object, None)}
# AIPerf's display units (src/aiperf/common/enums/metric_enums.py tags; display_unit of each metric class)
UNITS = {
    "time_to_first_token": "ms", "time_to_second_token": "ms", "inter_token_latency": "ms",
    "inter_chunk_latency": "ms", "request_latency": "ms", "input_sequence_length": "tokens",
    "output_sequence_length": "tokens", "output_token_throughput_per_user": "tokens/sec/user",
    "output_token_throughput": "tokens/sec", "total_token_throughput": "tokens/sec",
    "request_throughput": "requests/sec", "request_count": "requests", "error_request_count": "requests",
    "benchmark_duration": "sec", "goodput": "requests/sec", "good_request_count": "requests", "error_isl": "tokens",
    "total_isl": "tokens", "total_osl": "tokens", "min_request_timestamp": "ns", "max_response_timestamp": "ns",
}
# src/aiperf/common/models/export_models.py JsonMetricResult (plus count and sum, schema 1.1)
STAT_KEYS = ["avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]
BLOCK_FIELDS = set(STAT_KEYS) | {"unit", "count", "sum", "adj_p50", "adj_p90", "adj_p95", "adj_p99"}


class LoaderError(Exception):
    pass


def _typed(value, types, what):
    if value is None and None in types:
        return
    ok = [t for t in types if t is not None]
    # bool is an int to Python, not to msgspec/pydantic strict readers of an int field written as true
    if isinstance(value, bool) and bool not in ok and object not in ok:
        raise LoaderError("%s: %r is a bool" % (what, value))
    if not isinstance(value, tuple(ok)):
        raise LoaderError("%s: %r is not %s" % (what, value, ok))


def is_run_dir(path):
    """src/aiperf/plot/core/mode_detector.py _has_single_run_markers: both files (or their .zst)."""
    has = lambda name: os.path.exists(os.path.join(path, name)) or os.path.exists(os.path.join(path, name + ".zst"))
    return os.path.isdir(path) and has(JSONL) and has(AGGREGATE)


def find_runs(path):
    """mode_detector.py _find_all_run_directories_recursive: every run directory at or under path, sorted."""
    found = []
    for root, dirs, _ in os.walk(path):
        dirs.sort()
        if is_run_dir(root):
            found.append(root)
    if not found:
        raise LoaderError("Path does not contain any valid run directories: " + path)
    return sorted(found)


def parse_record(line):
    """src/aiperf/common/models/record_models.py decode_metric_record_info_json, then FileReaderMixin
    _convert_to_flat_dict (src/aiperf/plot/core/file_readers.py): one flat row."""
    payload = json.loads(line)
    meta = payload["metadata"]
    if not isinstance(meta, dict):
        raise LoaderError("metadata is not an object")
    unknown = set(meta) - set(METADATA_FIELDS)
    if unknown:
        raise LoaderError("Unexpected keyword argument(s) %s for MetricRecordMetadata" % sorted(unknown))
    missing = METADATA_REQUIRED - set(meta)
    if missing:
        raise LoaderError("Missing required argument(s) %s" % sorted(missing))
    for k, v in meta.items():
        _typed(v, METADATA_FIELDS[k], "metadata." + k)
    if meta["benchmark_phase"] not in CREDIT_PHASES:
        raise LoaderError("benchmark_phase %r" % meta["benchmark_phase"])
    row = dict(meta)
    for tag, mv in payload["metrics"].items():  # MetricValue(**value): value and unit
        if not isinstance(mv, dict) or set(mv) - {"value", "unit"} or "value" not in mv or "unit" not in mv:
            raise LoaderError("metrics.%s is not a MetricValue: %r" % (tag, mv))
        _typed(mv["unit"], (str,), "metrics.%s.unit" % tag)
        v = mv["value"]
        if isinstance(v, list):
            for x in v:
                _typed(x, (int, float), "metrics.%s.value[]" % tag)
            if tag == "inter_chunk_latency":  # the loader keeps stats of the list, not the list
                if v:
                    row["inter_chunk_latency_avg"] = sum(v) / len(v)
                continue
        else:
            _typed(v, (int, float), "metrics.%s.value" % tag)
        row[tag] = v
    err = payload.get("error")
    if err:  # msgspec.convert(payload["error"], ErrorDetails)
        if not isinstance(err, dict) or set(err) - set(ERROR_FIELDS) or "message" not in err:
            raise LoaderError("error is not an ErrorDetails: %r" % err)
        for k, v in err.items():
            _typed(v, ERROR_FIELDS[k], "error." + k)
        row["error"] = err
    td = payload.get("trace_data")
    if td is not None and not isinstance(td, dict):
        raise LoaderError("trace_data")
    return row


def load_requests(path):
    """FileReaderMixin._load_jsonl: bad lines are skipped with a warning; none valid is an error. Here every line must
    be valid (a skipped line is a lost request)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(parse_record(line))
            except (LoaderError, ValueError, KeyError, TypeError) as e:
                raise LoaderError("%s line %d: %s" % (path, n, e))
    if not rows:
        raise LoaderError("No valid records found in JSONL file")
    return rows


def load_aggregated(path):
    """FileReaderMixin._load_aggregated_json and DataLoader._extract_metadata (src/aiperf/plot/core/data_loader.py),
    RunMetadata's types (src/aiperf/plot/core/run_models.py), get_available_metrics: metric blocks are the top-level
    objects with a "unit"."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise LoaderError("not a JSON object")
    cfg = data.get("input_config") or {}
    endpoint, loadgen = cfg.get("endpoint", {}), cfg.get("loadgen", {})
    meta = {
        "model": (endpoint.get("model_names") or [None])[0],
        "concurrency": loadgen.get("concurrency"),
        "request_count": loadgen.get("request_count"),
        "endpoint_type": endpoint.get("type"),
        "start_time": data.get("start_time"),
        "end_time": data.get("end_time"),
        "was_cancelled": data.get("was_cancelled", False),
    }
    for k, types in (("model", (str, None)), ("concurrency", (int, None)), ("request_count", (int, None)),
                     ("endpoint_type", (str, None)), ("start_time", (str, None)), ("end_time", (str, None)),
                     ("was_cancelled", (bool,))):
        _typed(meta[k], types, "RunMetadata." + k)
    output = cfg.get("output", {})
    if "slice_duration" in output:
        _typed(output["slice_duration"], (int, float), "input_config.output.slice_duration")
    metrics = {}
    for tag, block in data.items():
        if isinstance(block, dict) and "unit" in block and tag not in ("input_config", "telemetry_data"):
            _typed(block["unit"], (str,), tag + ".unit")
            for k, v in block.items():
                if k in BLOCK_FIELDS and k != "unit":
                    _typed(v, (int, float, None), "%s.%s" % (tag, k))
            metrics[tag] = block
    if not metrics:
        raise LoaderError("No metrics found in aggregated data")
    for e in data.get("error_summary") or []:  # ErrorDetailsCount: error_details (ErrorDetails) and count
        if set(e) != {"error_details", "count"}:
            raise LoaderError("error_summary entry %r" % e)
        _typed(e["count"], (int,), "error_summary.count")
        d = e["error_details"]
        if set(d) - set(ERROR_FIELDS) or "message" not in d:
            raise LoaderError("error_summary.error_details %r" % d)
    return data, meta, metrics


def load_run(path):
    """DataLoader.load_run: the JSONL is required, then the aggregate; duration from the requests
    (_compute_duration_seconds: max request_end_ns - min request_start_ns)."""
    if not is_run_dir(path):
        raise LoaderError("Required JSONL file not found")
    rows = load_requests(os.path.join(path, JSONL))
    data, meta, metrics = load_aggregated(os.path.join(path, AGGREGATE))
    meta["duration_seconds"] = (max(r["request_end_ns"] for r in rows) - min(r["request_start_ns"] for r in rows)) / 1e9
    meta["run_name"] = os.path.basename(os.path.normpath(path))
    return {"metadata": meta, "requests": rows, "aggregated": data, "metrics": metrics}


def llmd_import(path):
    """llm-d-benchmark's import_aiperf (llmdbenchmark/analysis/benchmark_report/native_to_br0_2.py) against the
    BenchmarkReportV02 model (schema_v0_2.py): Statistics.mean is a required float, SequenceLength min/max are ints
    (max >= 1), LoadStandardized.concurrency an int >= 1 or absent, requests.total an int."""
    with open(path, encoding="utf-8") as f:
        r = json.load(f)
    get = lambda *keys: _nested(r, keys)
    conc = get("input_config", "loadgen", "concurrency")
    if conc is not None and (not isinstance(conc, int) or isinstance(conc, bool) or conc < 1):
        raise LoaderError("concurrency %r" % conc)
    for tag in ("time_to_first_token", "inter_token_latency", "request_latency", "input_sequence_length",
                "output_sequence_length", "output_token_throughput", "total_token_throughput", "request_throughput"):
        _typed(get(tag, "avg"), (int, float), tag + ".avg (Statistics.mean)")
    for tag in ("input_sequence_length", "output_sequence_length"):
        for k, least in (("min", 0), ("max", 1)):
            v = get(tag, k)
            if v is not None and (float(v) != int(v) or v < least):
                raise LoaderError("%s.%s %r: SequenceLength wants an int >= %d" % (tag, k, v, least))
    int(get("request_count", "avg") or 0)
    if not isinstance(r.get("error_summary", []), list):
        raise LoaderError("error_summary")
    return {"total": int(get("request_count", "avg") or 0), "failures": len(r.get("error_summary", [])),
            "model": get("input_config", "endpoint", "model_names", 0) or "unknown", "concurrency": conc}


def _nested(d, keys):
    for k in keys:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and k < len(d):
            d = d[k]
        else:
            return None
    return d


def read_csv(path):
    """profile_export_aiperf.csv (src/aiperf/exporters/csv_exporter.py): the distributions under
    Metric,avg,min,max,p1..p99,std; a blank line; Metric,Value. Returns {name: {col: text}}."""
    import csv
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    out, header = {}, None
    for row in rows:
        if not row:
            header = None
            continue
        if header is None:
            header = row
            if row[0] != "Metric":
                raise LoaderError("CSV part does not start with a Metric header: %r" % row)
            continue
        out[row[0]] = dict(zip(header[1:], row[1:]))
    return out
