# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small client for the Prometheus HTTP API (``/api/v1/query``, ``/api/v1/query_range``).

Transport through ``ansible.module_utils.urls.open_url`` (TLS verification, CA bundle,
client certificates), no other dependency: the advisor runs on the controller. Every failure
becomes ``PrometheusError`` with a message that says what was tried, what went wrong and what
to change; no traceback reaches the user.

Credentials stay with the URL they were given for: ``user:pass@`` in the URL becomes the Basic
credentials and is removed from the URL, so no message or report shows it (``redact_url``);
redirects are followed by hand, never with the Authorization header, and never from https to
http (urllib's and Ansible's redirect handlers keep the header for any target).
API reference: https://prometheus.io/docs/prometheus/2.42/querying/api/
"""

from __future__ import annotations

import base64
import collections
import http.client
import json
import os
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import warnings

from ansible.module_utils.urls import SSLValidationError, open_url

# Prometheus refuses a range query of more than 11,000 points per series
# (web/api/v1/api.go, "exceeded maximum resolution of 11,000 points per timeseries").
MAX_POINTS = 11000
# Redirects followed for one request (a reverse proxy's path or host change).
MAX_REDIRECTS = 5

# A series of a range answer: its labels, and its samples' times and values (float64 arrays).
RangeSeries = collections.namedtuple("RangeSeries", "metric times values")

# The "values" key of a series in a range answer, up to its array's "[". Never text inside a
# label value: a quote inside a JSON string is escaped, so `{"` or `,"` cannot occur there.
_VALUES_KEY = re.compile(rb'[{,]\s*"values"\s*:\s*\[')
_EMPTY_END = re.compile(rb'\s*\]')
_VALUES_END = re.compile(rb'\]\s*\]')
# What an array of [time, "value"] pairs as Prometheus writes them holds (numbers, NaN, +Inf,
# -Inf); any other text is left to json.loads.
_POINT_CHARS = b'0123456789.eE+-NaInf"[],\t\n\r '
_TO_SPACE = bytes.maketrans(b'[]"', b'   ')


def _np():
    import numpy   # lazily: ansible-test's import sanity test runs without numpy
    return numpy


def redact_url(url) -> str:
    """``url`` without its userinfo (``user:pass@``), for messages and reports."""
    text = str(url or "")
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return text.rsplit("@", 1)[-1]
    if "@" not in parts.netloc:
        return text
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


# How to reach the monitoring role's Prometheus from the controller.
REACH_HINT = ("forward its port and use http://127.0.0.1:9090 "
              "(kubectl -n monitoring port-forward svc/prometheus-operated 9090)")


class PrometheusError(Exception):
    """A failure talking to Prometheus, with what to do about it."""


class PrometheusClient:
    def __init__(self, url: str, timeout: float = 60.0, validate_certs: bool = True, ca_path: str | None = None,
                 client_cert: str | None = None, client_key: str | None = None, bearer_token: str | None = None,
                 username: str | None = None, password: str | None = None):
        if not isinstance(url, str) or not url.strip():
            raise PrometheusError("gpushare_prometheus_url is empty; give the base URL of Prometheus, "
                                  "e.g. http://prometheus-operated.monitoring:9090")
        try:
            parsed = urllib.parse.urlsplit(url.strip())
            parsed.port     # raises ValueError on a port that is not a number
        except ValueError:
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise PrometheusError("gpushare_prometheus_url %r is not an http(s) URL; give the base URL of "
                                  "Prometheus, e.g. http://prometheus-operated.monitoring:9090" % redact_url(url))
        if parsed.username is not None and username is None and not bearer_token:
            username = urllib.parse.unquote(parsed.username)
            password = urllib.parse.unquote(parsed.password or "")
        self.url = redact_url(url.strip()).rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": "application/json", "User-Agent": "gpushare.cluster-usage-advisor"}
        if bearer_token:
            self.headers["Authorization"] = "Bearer " + bearer_token
        elif username is not None:
            pair = ("%s:%s" % (username, password or "")).encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        for what, path in (("ca_path", ca_path), ("client_cert", client_cert), ("client_key", client_key)):
            if path and not os.path.isfile(path):
                raise PrometheusError("cannot load the TLS files for %s: %s %s is not a readable file"
                                      % (self.url, what, path))
        self.tls = {"validate_certs": validate_certs, "ca_path": ca_path, "client_cert": client_cert,
                    "client_key": client_key}
        # Every answered request: path, query, seconds (sent to decoded), bytes, series, samples.
        self.log: list[dict] = []

    # -- the two API calls -------------------------------------------------------------

    def query(self, expr: str, time: float | None = None) -> list[dict]:
        """An instant query; the result vector as [{"metric": {...}, "value": [t, "v"]}]."""
        params = {"query": expr}
        if time is not None:
            params["time"] = "%.3f" % time
        return self._get("/api/v1/query", params, expr, self._decode)

    def query_range(self, expr: str, start: float, end: float, step: int) -> list[dict]:
        """A range query, split into pieces of at most MAX_POINTS steps; series of the pieces
        are joined by their labels. Result: [{"metric": {...}, "values": [[t, "v"], ...]}]."""
        merged: dict[tuple, dict] = {}
        for series in self._range_pieces(expr, start, end, step, self._decode):
            key = tuple(sorted(series.get("metric", {}).items()))
            entry = merged.setdefault(key, {"metric": series.get("metric", {}), "values": []})
            entry["values"].extend(series.get("values", []))
        return list(merged.values())

    def query_range_arrays(self, expr: str, start: float, end: float, step: int) -> list[RangeSeries]:
        """``query_range`` as RangeSeries (labels, times and values as float64 arrays), decoded
        without a Python object per sample: 28 days of a fleet is millions of samples."""
        np = _np()
        merged: dict[tuple, list] = {}
        for series in self._range_pieces(expr, start, end, step, self._decode_matrix):
            merged.setdefault(tuple(sorted(series.metric.items())), []).append(series)
        return [parts[0] if len(parts) == 1 else
                RangeSeries(parts[0].metric, np.concatenate([p.times for p in parts]),
                            np.concatenate([p.values for p in parts])) for parts in merged.values()]

    def _range_pieces(self, expr: str, start: float, end: float, step: int, decode):
        """The series of each piece of at most MAX_POINTS steps, decoded by ``decode``."""
        piece = step * (MAX_POINTS - 1)
        t = start
        while t <= end:
            stop = min(end, t + piece)
            yield from self._get("/api/v1/query_range",
                                 {"query": expr, "start": "%.3f" % t, "end": "%.3f" % stop, "step": str(step)},
                                 expr, decode)
            t = stop + step

    # -- transport ---------------------------------------------------------------------

    def _get(self, path: str, params: dict, expr: str, decode) -> list:
        """The result list of one API call, decoded by ``decode``; recorded in ``log``."""
        address = self.url + path + "?" + urllib.parse.urlencode(params)
        headers = self.headers
        began = time.monotonic()
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = open_url(address, headers=headers, timeout=self.timeout, follow_redirects="none",
                                    **self.tls)
                body = response.read()
                result = decode(body, path, expr)
                self.log.append({"path": path, "query": expr, "seconds": round(time.monotonic() - began, 3),
                                 "bytes": len(body), "series": len(result),
                                 "samples": sum(_samples(row) for row in result)})
                return result
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location") if exc.headers else None
                if not (300 <= exc.code < 400 and location):
                    raise PrometheusError(self._http_message(exc, path, expr)) from None
                address = self._redirect(address, urllib.parse.urljoin(address, location))
                headers = dict((k, v) for k, v in headers.items() if k.lower() != "authorization")
            except SSLValidationError as exc:
                raise PrometheusError("TLS certificate of %s not trusted: %s; give the CA with gpushare_prometheus_ca_path, "
                                      "or (only for a test server) gpushare_prometheus_validate_certs=false"
                                      % (self.url, str(exc).split("\n", 1)[0])) from None
            except urllib.error.URLError as exc:
                raise PrometheusError(self._url_message(exc.reason)) from None
            except (socket.timeout, TimeoutError):
                raise PrometheusError("Prometheus at %s did not answer %s within %s s (query %s); raise the timeout "
                                      "or ask for fewer days" % (self.url, path, self.timeout, expr)) from None
            except (ssl.SSLError, ConnectionError, http.client.HTTPException, OSError) as exc:
                raise PrometheusError(self._url_message(exc)) from None
        raise PrometheusError("Prometheus at %s redirected %s more than %d times; give gpushare_prometheus_url as "
                              "the address that answers" % (self.url, path, MAX_REDIRECTS))

    def _redirect(self, address: str, target: str) -> str:
        """The next address of a redirect; https to anything else is refused."""
        if urllib.parse.urlsplit(address).scheme == "https" and urllib.parse.urlsplit(target).scheme != "https":
            raise PrometheusError("Prometheus at %s redirected to %s, from https to %s; refused, the query and "
                                  "any session would travel in clear. Give the https address in "
                                  "gpushare_prometheus_url" % (self.url, redact_url(target).split("?", 1)[0],
                                                               urllib.parse.urlsplit(target).scheme or "?"))
        return target

    def _decode(self, body: bytes, path: str, expr: str) -> list:
        try:
            answer = json.loads(body)
        except ValueError:
            raise PrometheusError("%s%s did not answer with JSON (first bytes: %r); gpushare_prometheus_url must be the "
                                  "base URL of the Prometheus server (the one whose /api/v1/query answers), not a "
                                  "Grafana or UI page" % (self.url, path, body[:60])) from None
        if not isinstance(answer, dict) or "status" not in answer:
            raise PrometheusError("%s%s answered JSON that is not a Prometheus API response; check "
                                  "gpushare_prometheus_url" % (self.url, path))
        if answer["status"] != "success":
            raise PrometheusError("Prometheus refused the query %s: %s (%s)"
                                  % (expr, answer.get("error", "no error text"), answer.get("errorType", "?")))
        data = answer.get("data") or {}
        result = data.get("result")
        if not isinstance(result, list):
            raise PrometheusError("Prometheus answered %s without a result list (resultType %r)"
                                  % (expr, data.get("resultType")))
        return result

    def _decode_matrix(self, body: bytes, path: str, expr: str) -> list[RangeSeries]:
        """A range answer as RangeSeries: the "values" arrays cut out and read by numpy, the
        rest (status, labels) through ``_decode`` with the same checks and messages."""
        np = _np()
        skeleton, arrays = split_values(body)
        out = []
        for row in self._decode(skeleton, path, expr):
            if not isinstance(row, dict):
                raise PrometheusError("Prometheus answered %s with a result that is not a list of series (%r); "
                                      "check gpushare_prometheus_url" % (expr, row))
            values = row.get("values")
            if isinstance(values, int) and not isinstance(values, bool):
                points = arrays[values]
            else:       # not cut out (text numpy does not read as Prometheus writes it), or absent
                try:
                    points = np.array([[float(t), float(v)] for t, v in values or ()], dtype=np.float64).reshape(-1, 2)
                except (TypeError, ValueError):
                    raise PrometheusError("Prometheus answered %s with samples that are not [time, \"value\"] pairs "
                                          "(%s); check gpushare_prometheus_url" % (expr, json.dumps(values)[:80])) from None
            out.append(RangeSeries(row.get("metric", {}), points[:, 0], points[:, 1]))
        return out

    def _http_message(self, exc: urllib.error.HTTPError, path: str, expr: str) -> str:
        code = exc.code
        if code in (401, 403):
            return ("Prometheus at %s refused access (HTTP %d %s): give credentials with "
                    "gpushare_prometheus_bearer_token, or gpushare_prometheus_username and gpushare_prometheus_password"
                    % (self.url, code, exc.reason))
        if code == 404:
            return ("%s%s does not exist (HTTP 404): gpushare_prometheus_url must be the base URL of Prometheus "
                    "(e.g. http://prometheus:9090, or with its --web.route-prefix), without /graph or /api/v1"
                    % (self.url, path))
        if code == 400 or code == 422:
            try:
                detail = json.loads(exc.read()).get("error", "")
            except (ValueError, AttributeError, OSError):
                detail = ""
            return "Prometheus refused the query %s (HTTP %d): %s" % (expr, code, detail or exc.reason)
        return "Prometheus at %s answered HTTP %d %s to %s" % (self.url, code, exc.reason, path)

    def _url_message(self, reason) -> str:
        if isinstance(reason, ssl.SSLCertVerificationError):
            return ("TLS certificate of %s not trusted: %s; give the CA with gpushare_prometheus_ca_path, or "
                    "(only for a test server) gpushare_prometheus_validate_certs=false"
                    % (self.url, getattr(reason, "verify_message", None) or reason))
        if isinstance(reason, ssl.SSLError):
            return ("TLS handshake with %s failed: %s; is the URL's scheme right (http vs https), and does the "
                    "server want a client certificate (gpushare_prometheus_client_cert/client_key)?" % (self.url, reason))
        if isinstance(reason, socket.gaierror):
            # Often a cluster-internal Service name, which resolves only inside the cluster.
            return ("cannot resolve the host of %s: %s; check gpushare_prometheus_url: a Service name such as "
                    "prometheus-operated.monitoring.svc resolves only inside the cluster, so from outside %s"
                    % (self.url, reason, REACH_HINT))
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return "Prometheus at %s did not answer within %s s; check the URL and the network" % (self.url, self.timeout)
        return ("Prometheus at %s is unreachable: %s; check gpushare_prometheus_url and that Prometheus runs, and %s"
                % (self.url, reason, REACH_HINT))


def _samples(row) -> int:
    """Samples in one row of a result: a RangeSeries, a range row (its "values") or an instant one."""
    if isinstance(row, RangeSeries):
        return len(row.times)
    return len(row.get("values") or ()) if isinstance(row, dict) and "values" in row else 1


def split_values(body: bytes) -> tuple[bytes, list]:
    """``body`` with each "values" array of [time, "value"] pairs replaced by its index in the
    list returned with it, that array read as an (n, 2) float64 array. An array whose text is
    not plain pairs of numbers stays in place, for json.loads."""
    np = _np()
    parts, arrays, copied, pos = [], [], 0, 0
    while True:
        key = _VALUES_KEY.search(body, pos)
        if key is None:
            break
        first = key.end() - 1           # the array's "["
        empty = _EMPTY_END.match(body, first + 1)
        if empty:
            pos, points = empty.end(), np.empty((0, 2))
        else:
            close = _VALUES_END.search(body, first)
            if close is None:
                break
            pos, points = close.end(), _points(body[first:close.end()])
        if points is not None:
            parts += [body[copied:first], b"%d" % len(arrays)]
            arrays.append(points)
            copied = pos
    parts.append(body[copied:])
    return b"".join(parts), arrays


def _points(text: bytes):
    """``[[t,"v"],...]`` as an (n, 2) float64 array, or None when the text is anything else."""
    np = _np()
    pairs = text.count(b"[") - 1
    # Only quotes in pairs around each value: the "]]" that ended ``text`` is outside any string.
    if text.translate(None, _POINT_CHARS) or text.count(b'"') != 2 * pairs:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # numpy warns (not raises) on text it cannot read
            flat = np.fromstring(text.translate(_TO_SPACE), dtype=np.float64, sep=",")
    except (ValueError, DeprecationWarning):
        return None
    return flat.reshape(pairs, 2) if flat.size == 2 * pairs else None
