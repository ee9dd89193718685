"""Loading surge's HTML reports in Debian's headless Chromium, for the report tests (standard library only).

render() opens a page from a file:// URL with the network off, lets its scripts run, and returns:
  - the console lines the page produced (Chromium logs each as "CONSOLE"; the report logs nothing, so any line,
    an uncaught error included, is a failure),
  - the page's self-check (report.js writes it into #selfcheck when it has drawn: every chart with its data
    points and the data-coloured pixels it painted),
  - every element carrying a data-value (the numbers the page shows, with the value they were made from), and the
    cells of the block that says where the figures came from (data-meta: command, version, host, date, ...).
"""

import html.parser
import json
import os
import shutil
import subprocess

import harness


def chromium(h):
    """The Chromium binary; a failed check under CI (tests/run installs it), a skip elsewhere."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        h.check(False, "chromium installed (tests/run installs Debian's chromium)")
        return None
    h.skip("chromium not installed (apt-get install chromium)")


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.values = []  # (attrs dict, text)
        self._open = []  # stack of [attrs, text parts] for elements with data-value
        self._in_check = False
        self.selfcheck = ""
        self.rendered = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.rendered = a.get("data-rendered")
        if tag == "pre" and a.get("id") == "selfcheck":
            self._in_check = True
        if tag in ("td", "th", "div") and ("data-value" in a or "data-stat" in a or "data-key" in a or "data-meta" in a):
            self._open.append([tag, a, []])
        elif self._open:
            self._open.append([tag, None, None])

    def handle_endtag(self, tag):
        if tag == "pre" and self._in_check:
            self._in_check = False
        if self._open:
            t, a, parts = self._open.pop()
            if a is not None:
                self.values.append((a, "".join(parts).strip()))

    def handle_data(self, data):
        if self._in_check:
            self.selfcheck += data
        for entry in self._open:
            if entry[2] is not None:
                entry[2].append(data)


class Rendered:
    def __init__(self, dom, console, seconds):
        self.dom = dom
        self.console = console
        self.seconds = seconds
        p = _Page()
        p.feed(dom)
        self.values = p.values
        self.rendered = p.rendered
        try:
            self.check = json.loads(p.selfcheck) if p.selfcheck.strip() else None
        except ValueError:
            self.check = None

    def charts(self):
        return {c["id"]: c for c in (self.check or {}).get("charts", [])}

    def meta(self, **match):
        """The text of each cell of the page's provenance block (data-meta -> text), for one run or points entry:
        meta(run=0) or meta(points=0)."""
        return {a["data-meta"]: text for a, text in self.cells(**match) if "data-meta" in a}

    def cells(self, **match):
        """The (attrs, text) of the elements whose data-* attributes equal match (keys without "data-")."""
        out = []
        for a, text in self.values:
            if all(a.get("data-" + k.replace("_", "-")) == str(v) for k, v in match.items()):
                out.append((a, text))
        return out


def profile_dir(h):
    """Chromium's user-data folder, one per calling thread: a second Chromium given a folder in use hands its page to
    the first and exits, so tests that render from two threads at once need two."""
    import threading
    return h.path("chromium-profile-%d" % threading.get_ident())


def render(h, path, width=1300, height=3000, budget_ms=20000, timeout=90):
    """Load the page at path in headless Chromium; returns a Rendered (None when Chromium is missing under CI)."""
    exe = chromium(h)
    if not exe:
        return None
    profile = profile_dir(h)
    os.makedirs(profile, exist_ok=True)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--window-size=%d,%d" % (width, height),
           "--virtual-time-budget=%d" % budget_ms, "--proxy-server=127.0.0.1:9", "--dump-dom",
           "file://" + os.path.abspath(path)]
    import time
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - t0
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    h.check(proc.returncode == 0, "chromium loads %s" % path, proc.stderr[-2000:])
    return Rendered(proc.stdout, console, seconds)


def screenshot(h, path, png, width=1300, height=2400, timeout=90):
    exe = chromium(h)
    if not exe:
        return False
    profile = profile_dir(h)
    os.makedirs(profile, exist_ok=True)
    proc = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height),
                           "--virtual-time-budget=20000", "--screenshot=" + png, "file://" + os.path.abspath(path)],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode == 0 and os.path.exists(png)


def page_ok(h, r, what, expect_charts=()):
    """The common checks: loaded, no console output, the self-check says every chart was drawn with data."""
    if r is None:
        return False
    h.check(r.console == [], "%s: no console messages" % what, r.console[:5])
    h.check(r.check is not None, "%s: the page wrote its self-check" % what, r.dom[-1500:])
    if r.check is None:
        return False
    h.check(r.check.get("errors") == [], "%s: no script errors" % what, r.check.get("errors"))
    charts = r.charts()
    for cid in expect_charts:
        h.check(cid in charts, "%s: chart %s drawn" % (what, cid), sorted(charts))
    for cid, c in charts.items():
        h.check(c["points"] > 0, "%s: chart %s has data points" % (what, cid), c)
        h.check(c["painted"] > 0, "%s: chart %s painted its data" % (what, cid), c)
        axes_hold_data(h, c, "%s: chart %s" % (what, cid))
    h.check(r.rendered == "ok", "%s: the page says it rendered" % what, r.rendered)
    return True


def axes_hold_data(h, c, what):
    """Every data point of an xy chart lies within its axes as drawn (the page's self-check reads each scale's min
    and max from Chart.js, the data's extremes from the datasets, and counts the points placed inside the plot
    area)."""
    if "data" not in c or not c["data"]:  # a bar chart: its x is a category axis
        return
    for axis, d in c["data"].items():
        sc = c["scales"].get(axis)
        if not h.check(sc is not None, "%s: axis %s drawn" % (what, axis), c):
            continue
        slack = 1e-9 * max(1.0, abs(d["max"]), abs(d["min"]))
        h.check(sc["max"] >= d["max"] - slack, "%s: axis %s reaches the highest point (axis max %r, data max %r)"
                % (what, axis, sc["max"], d["max"]))
        h.check(sc["min"] <= d["min"] + slack, "%s: axis %s reaches the lowest point (axis min %r, data min %r)"
                % (what, axis, sc["min"], d["min"]))
    h.check(c["shown"] == c["points"], "%s: every point placed inside the plot (%d of %d)"
            % (what, c["shown"], c["points"]))


def same_number(shown, value):
    """A shown number ("1,234.5", "0.0613", "—") agrees with the value it was made from, to its shown digits."""
    if value is None:
        return shown == "\u2014"
    text = shown.replace(",", "").split(" ")[0]
    try:
        x = float(text)
    except ValueError:
        return False
    if "." in text:
        digits = len(text.split(".")[1])
        return abs(x - value) <= 0.5 * 10 ** -digits + 1e-12 or abs(x - value) <= abs(value) * 5e-3
    return abs(x - value) <= 0.5 + 1e-9


__all__ = ["chromium", "render", "screenshot", "page_ok", "axes_hold_data", "same_number", "harness"]
