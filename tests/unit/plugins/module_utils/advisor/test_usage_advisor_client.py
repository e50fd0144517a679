# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad input on the way to Prometheus, against real sockets and HTTP(S) servers started here:
nothing listening, a host that does not resolve, a URL that is not Prometheus' API (404, an
HTML page, JSON of another kind), refused credentials, an untrusted TLS certificate, http to
an https port. Each gives one clear PrometheusError, never a traceback or a result."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import ssl
import subprocess
import threading

import pytest

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import (
    PrometheusClient, PrometheusError)
from ansible_collections.gpushare.cluster.plugins.module_utils.advisor import usage_advisor as ua

EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers by the server's `mode`: api (an empty Prometheus), html, other-json, auth, bad-query,
    redirect (302 to the server's `target` with the same path)."""

    def log_message(self, *args):
        pass

    def _send(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        mode = self.server.mode
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", self.server.target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if mode == "auth":
            wanted = "Basic " + base64.b64encode(b"grafana:s3cret").decode()
            if self.headers.get("Authorization") not in (wanted, "Bearer t0ken"):
                return self._send(401, {"error": "unauthorised"})
            return self._send(200, EMPTY)
        if not self.path.startswith("/api/v1/"):
            return self._send(404, b"404 page not found", "text/plain")
        if mode == "html":
            return self._send(200, b"<!doctype html><title>Grafana</title>", "text/html")
        if mode == "other-json":
            return self._send(200, {"hello": "world"})
        if mode == "bad-query":
            return self._send(400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})
        return self._send(200, EMPTY)


def _serve(mode, tls=None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.mode = mode
    server.seen = []        # (path, Authorization header) of each request
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def server(request):
    srv = _serve(request.param)
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    return str(d / "cert.pem"), str(d / "key.pem")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening():
    client = PrometheusClient("http://127.0.0.1:%d" % _free_port(), timeout=5)
    with pytest.raises(PrometheusError, match="is unreachable: .*refused.*check gpushare_prometheus_url"):
        client.query("up")


def test_host_that_does_not_resolve():
    """.invalid never resolves (RFC 2606). Like a refused connection, the message says how to
    reach Prometheus (issue 20: it said only "check gpushare_prometheus_url")."""
    client = PrometheusClient("http://prometheus.invalid:9090", timeout=5)
    with pytest.raises(PrometheusError, match="cannot resolve the host of http://prometheus.invalid:9090: .*"
                                              "resolves only inside the cluster.*port-forward svc/prometheus-operated"):
        client.query("up")


@pytest.mark.parametrize("url", ["", "prometheus:9090", "ftp://prometheus:9090", "http://"])
def test_not_a_url(url):
    with pytest.raises(PrometheusError, match="gpushare_prometheus_url"):
        PrometheusClient(url)


@pytest.mark.parametrize("server", ["api"], indirect=True)
def test_wrong_path_is_a_404_with_the_fix(server):
    client = PrometheusClient(server + "/graph")
    with pytest.raises(PrometheusError, match="HTTP 404.*base URL of Prometheus.*without /graph"):
        client.query("up")


@pytest.mark.parametrize("server", ["html"], indirect=True)
def test_a_web_page_is_not_prometheus(server):
    with pytest.raises(PrometheusError, match="did not answer with JSON.*not a Grafana or UI page"):
        PrometheusClient(server).query("up")


@pytest.mark.parametrize("server", ["other-json"], indirect=True)
def test_json_that_is_not_the_api(server):
    with pytest.raises(PrometheusError, match="not a Prometheus API response"):
        PrometheusClient(server).query("up")


@pytest.mark.parametrize("server", ["bad-query"], indirect=True)
def test_refused_query_names_the_query(server):
    with pytest.raises(PrometheusError, match=r"refused the query up\( \(HTTP 400\): parse error"):
        PrometheusClient(server).query("up(")


@pytest.mark.parametrize("server", ["auth"], indirect=True)
def test_credentials(server):
    with pytest.raises(PrometheusError, match="refused access \\(HTTP 401.*bearer_token.*username"):
        PrometheusClient(server).query("up")
    with pytest.raises(PrometheusError, match="HTTP 401"):
        PrometheusClient(server, username="grafana", password="wrong").query("up")
    assert PrometheusClient(server, username="grafana", password="s3cret").query("up") == []
    assert PrometheusClient(server, bearer_token="t0ken").query("up") == []


def test_tls_untrusted_then_trusted(tls_files):
    srv = _serve("api", tls_files)
    url = "https://127.0.0.1:%d" % srv.server_address[1]
    try:
        with pytest.raises(PrometheusError, match="TLS certificate of .* not trusted.*ca_path.*validate_certs"):
            PrometheusClient(url, timeout=5).query("up")
        assert PrometheusClient(url, ca_path=tls_files[0]).query("up") == []
        assert PrometheusClient(url, validate_certs=False).query("up") == []
        with pytest.raises(PrometheusError, match="is unreachable|TLS|did not answer"):
            PrometheusClient(url.replace("https", "http"), timeout=5).query("up")
    finally:
        srv.shutdown()


def test_missing_tls_files_are_named(tmp_path):
    with pytest.raises(PrometheusError, match="cannot load the TLS files.*missing.pem"):
        PrometheusClient("https://127.0.0.1:1", ca_path=str(tmp_path / "missing.pem"))


@pytest.mark.parametrize("server", ["api"], indirect=True)
def test_empty_answers_give_no_proposal(server):
    """An API that answers but holds none of the metrics: the message names them."""
    with pytest.raises(ua.AdviceError, match="no dcgm-exporter series \\(DCGM_FI_DEV_FB_USED, "
                                             "DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_GPU_UTIL\\)"):
        ua.fetch_usage(PrometheusClient(server), 1795910400.0, ua.Settings())


def test_range_queries_are_split_under_the_point_limit():
    """28 days at 60 s is 40,320 points: four requests of at most 11,000 points each."""
    seen = []

    class Counting(Handler):
        def do_GET(self):  # noqa: N802
            from urllib.parse import parse_qs, urlparse
            q = parse_qs(urlparse(self.path).query)
            seen.append((float(q["end"][0]) - float(q["start"][0])) / float(q["step"][0]) + 1)
            return self._send(200, {"status": "success", "data": {"resultType": "matrix", "result": []}})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        PrometheusClient("http://127.0.0.1:%d" % srv.server_address[1]).query_range("up", 0, 28 * 86400, 60)
    finally:
        srv.shutdown()
    assert len(seen) == 4 and max(seen) <= 11000 and sum(seen) >= 28 * 1440


BASIC_S3CRET = "Basic " + base64.b64encode(b"grafana:s3cret").decode()


def test_userinfo_in_the_url_is_sent_as_credentials_and_shown_nowhere():
    srv = _serve("auth")
    try:
        url = "http://grafana:s3cret@127.0.0.1:%d" % srv.server_address[1]
        client = PrometheusClient(url)
        assert client.query("up") == []
        assert srv.seen[-1][1] == BASIC_S3CRET
        assert client.url == "http://127.0.0.1:%d" % srv.server_address[1]
        srv.mode = "html"
        with pytest.raises(PrometheusError) as refused:
            client.query("up")
        assert "s3cret" not in str(refused.value) and "grafana@" not in str(refused.value)
        with pytest.raises(PrometheusError) as bad:
            PrometheusClient("ftp://grafana:s3cret@prometheus:9090")
        assert "s3cret" not in str(bad.value) and "ftp://prometheus:9090" in str(bad.value)
    finally:
        srv.shutdown()


def test_the_advisor_messages_carry_no_userinfo():
    """The advisor's messages and the report's source are the client's url."""
    srv = _serve("api")
    try:
        client = PrometheusClient("http://grafana:s3cret@127.0.0.1:%d" % srv.server_address[1])
        with pytest.raises(ua.AdviceError) as empty:
            ua.fetch_usage(client, 1795910400.0, ua.Settings())
        assert "s3cret" not in str(empty.value) and "127.0.0.1" in str(empty.value)
    finally:
        srv.shutdown()


def test_a_redirect_is_followed_without_the_authorization_header():
    """The credentials were given for the first server; the one it redirects to gets none."""
    other = _serve("api")
    first = _serve("redirect")
    first.target = "http://127.0.0.1:%d" % other.server_address[1]
    try:
        client = PrometheusClient("http://127.0.0.1:%d" % first.server_address[1], username="grafana", password="s3cret")
        assert client.query("up") == []
        assert [auth for _path, auth in first.seen] == [BASIC_S3CRET]
        assert [path.split("?")[0] for path, _auth in other.seen] == ["/api/v1/query"]
        assert [auth for _path, auth in other.seen] == [None]
        assert PrometheusClient(first.target.replace("http://", "http://u:p@")).query("up") == []
        assert other.seen[-1][1] == "Basic " + base64.b64encode(b"u:p").decode()
    finally:
        first.shutdown()
        other.shutdown()


def test_a_redirect_from_https_to_http_is_refused(tls_files):
    other = _serve("api")
    first = _serve("redirect", tls_files)
    first.target = "http://127.0.0.1:%d" % other.server_address[1]
    try:
        client = PrometheusClient("https://127.0.0.1:%d" % first.server_address[1], ca_path=tls_files[0],
                                  bearer_token="t0ken")
        with pytest.raises(PrometheusError, match="redirected to http://127.0.0.1:%d/api/v1/query, from https to http; "
                           "refused" % other.server_address[1]):
            client.query("up")
        assert other.seen == []
    finally:
        first.shutdown()
        other.shutdown()


def test_redirect_loops_end_with_a_message():
    srv = _serve("redirect")
    srv.target = "http://127.0.0.1:%d" % srv.server_address[1]
    try:
        with pytest.raises(PrometheusError, match="redirected /api/v1/query more than 5 times"):
            PrometheusClient(srv.target).query("up")
        assert len(srv.seen) == 6
    finally:
        srv.shutdown()
