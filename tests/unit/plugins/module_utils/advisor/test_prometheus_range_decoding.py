# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fast decoder of range answers (PrometheusClient.query_range_arrays) gives exactly what
json.loads and float() give, on answers written as Prometheus 2.42 writes them (values
"NaN", "+Inf", "-Inf", exponents, integers, negatives; timestamps with milliseconds) and on
label values that hold escaped quotes, backslashes, unicode, "]", "}" and "values"; empty
results and series; the pieces of a long range joined; error answers with the old messages;
and every request is recorded in ``log``."""

from __future__ import annotations

import http.server
import json
import math
import threading
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpushare.cluster.plugins.module_utils.advisor.prometheus_client import (
    MAX_POINTS, PrometheusClient, PrometheusError, split_values)

PATH = "/api/v1/query_range"
NASTY_LABELS = ['a\\"b', "back\\slash\\", 'end\\', '"values":[[1,"2"]]', ",\"values\": [", "]]", "}", "{",
                "caf\u00e9 \u65e5\u672c \U0001f600", "\u2028", "<&>", "", " "]


def _go_float(v: float) -> str:
    """A value as Prometheus 2.42 writes it (jsonutil.MarshalValue: strconv 'f', -1, or 'e'
    below 1e-6 and from 1e21; NaN, +Inf, -Inf)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v != 0 and (abs(v) < 1e-6 or abs(v) >= 1e21):
        return repr(v)      # 1e-07, 1.5e+21: Python's repr writes what Go's 'e', -1 writes
    return np.format_float_positional(v, unique=True, trim="-")


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(_go_float),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-10**12, 10**12).map(str),
    st.sampled_from(["1e-05", "-0", "0", "-1.5e+300", "5e-324", "NaN", "+Inf", "-Inf"]),
    # Text float() reads but Prometheus never writes: left to json.loads, still the same answer.
    st.sampled_from(["1_000", "Infinity", "-infinity", "nan", " 7 ", "1E3"]))
times = st.one_of(st.integers(0, 4 * 10**9).map(str),
                  st.integers(0, 4 * 10**12).map(lambda ms: "%d.%03d" % divmod(ms, 1000)),
                  st.floats(0, 4e9).map(repr))
labels = st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(["values", "metric", "__name__"])),
                         st.one_of(st.text(max_size=12), st.sampled_from(NASTY_LABELS)), max_size=4)
series = st.tuples(labels, st.one_of(st.none(), st.lists(st.tuples(times, values), max_size=12)), st.booleans())


def _answer(rows, spaced: bool, ascii_only: bool) -> bytes:
    """A matrix answer: per row its labels, its points (None: a series of histograms only,
    no "values") and whether "values" comes before "metric"."""
    comma, colon = (", ", ": ") if spaced else (",", ":")
    out = []
    for metric, points, values_first in rows:
        parts = ['"metric"%s%s' % (colon, json.dumps(metric, ensure_ascii=ascii_only, separators=(comma, colon)))]
        if points is None:
            parts.append('"histograms"%s[[1,{"count":"1","sum":"1","buckets":[[0,"0","1","1"]]}]]' % colon)
        else:
            pairs = ["[%s%s%s]" % (t, comma, json.dumps(v)) for t, v in points]
            parts.append('"values"%s[%s]' % (colon, comma.join(pairs)))
        out.append("{%s}" % comma.join(parts[::-1] if values_first else parts))
    text = '{"status"%s"success"%s"data"%s{"resultType"%s"matrix"%s"result"%s[%s]}}' % (
        colon, comma, colon, colon, comma, colon, comma.join(out))
    return text.encode()


def _expected(body: bytes):
    """What json.loads and float() make of the answer: (labels, times, values) per series."""
    return [(row["metric"], [float(t) for t, _v in row.get("values", [])], [float(v) for _t, v in row.get("values", [])])
            for row in json.loads(body)["data"]["result"]]


def _same(got, want) -> bool:
    """Equal floats, NaN where NaN, and the sign of zeros and infinities kept."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return got.dtype == np.float64 and got.shape == want.shape and \
        bool(np.all((got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)))


def _decode(body: bytes):
    return PrometheusClient("http://prometheus.test")._decode_matrix(body, PATH, "q")  # pylint: disable=protected-access


def _check(body: bytes):
    got = _decode(body)
    want = _expected(body)
    assert len(got) == len(want)
    for g, (metric, ts, vs) in zip(got, want):
        assert g.metric == metric
        assert _same(g.times, ts), (g.times, ts)
        assert _same(g.values, vs), (g.values, vs)


@settings(max_examples=300, deadline=None)
@given(st.lists(series, max_size=5), st.booleans(), st.booleans())
def test_the_fast_decoder_gives_what_json_loads_and_float_give(rows, spaced, ascii_only):
    _check(_answer(rows, spaced, ascii_only))


@pytest.mark.parametrize("indent", [None, 1])
def test_every_value_form_prometheus_writes(indent):
    points = [[1700000000, "NaN"], [1700000000.5, "+Inf"], [1700000001.123, "-Inf"], [1700000002, "1e-05"],
              [1700000003, "-3"], [1700000004, "123456789012345680000"], [1700000005, "1.5e+21"], [1, "-0.25"],
              [2, "0"], [3, "42"]]
    result = [{"metric": {"__name__": "x", "q": 'say "hi" \\ ]} "values":[[1,"2"]] \u65e5'}, "values": points},
              {"metric": {}, "values": []}, {"metric": {"only": "histograms"}, "histograms": []}]
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}, indent=indent).encode()
    _check(body)
    got = _decode(body)
    assert math.isnan(got[0].values[0]) and list(got[0].values[1:3]) == [math.inf, -math.inf]
    assert len(got[1].times) == 0 and len(got[2].times) == 0


# The value forms Prometheus writes (numbers, NaN, +Inf, -Inf), without the ones only float() reads.
prometheus_values = values.filter(lambda v: "_" not in v and "t" not in v and v.strip() == v and "E" not in v
                                  and v != "nan")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(labels, st.lists(st.tuples(times, prometheus_values), max_size=12), st.booleans()),
                max_size=5),
       st.booleans(), st.booleans(), st.booleans())
def test_prometheus_answers_take_the_fast_path(rows, spaced, ascii_only, indented):
    """No "values" array of an answer as Prometheus writes it (or a proxy indents it) is left
    to json.loads: each is cut out of the text and read by numpy."""
    body = _answer(rows, spaced, ascii_only)
    if indented:
        body = json.dumps(json.loads(body), indent=1).encode()
    skeleton, arrays = split_values(body)
    cut = [row["values"] for row in json.loads(skeleton)["data"]["result"]]
    assert cut == list(range(len(rows))) and len(arrays) == len(rows)
    assert [len(a) for a in arrays] == [len(points) for _m, points, _f in rows]


def test_empty_result():
    assert _decode(b'{"status":"success","data":{"resultType":"matrix","result":[]}}') == []


@pytest.mark.parametrize("body, message", [
    (b'{"status":"error","errorType":"bad_data","error":"parse error"}',
     "Prometheus refused the query q: parse error (bad_data)"),
    (b'<!doctype html><title>Grafana</title>',
     "http://prometheus.test/api/v1/query_range did not answer with JSON (first bytes: b'<!doctype html><title>"
     "Grafana</title>'); gpushare_prometheus_url must be"),
    (b'{"hello": "world"}', "http://prometheus.test/api/v1/query_range answered JSON that is not a Prometheus API"),
    (b'{"status":"success","data":{"resultType":"scalar","result":null}}',
     "Prometheus answered q without a result list (resultType 'scalar')"),
])
def test_error_answers_give_the_messages_of_the_list_decoder(body, message):
    with pytest.raises(PrometheusError) as fast:
        _decode(body)
    with pytest.raises(PrometheusError) as lists:
        PrometheusClient("http://prometheus.test")._decode(body, PATH, "q")  # pylint: disable=protected-access
    assert str(fast.value) == str(lists.value) and str(fast.value).startswith(message)


class _Pieces(http.server.BaseHTTPRequestHandler):
    """A range answer over the asked window: two series, one sample per step, the value the
    time over 60; the second series has no sample after 20 days. Records what it sent."""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        q = parse_qs(url.query)
        if url.path == "/api/v1/query":
            rows = [{"metric": {"gpu": "0"}, "value": [1, "1"]}]
            return self._send({"status": "success", "data": {"resultType": "vector", "result": rows}}, url, q, 1)
        start, end, step = float(q["start"][0]), float(q["end"][0]), int(q["step"][0])
        ts = np.arange(start, end + 1, step)
        rows = [{"metric": {"gpu": "0"}, "values": [[int(t), "%d" % (t // 60)] for t in ts]},
                {"metric": {"gpu": "1", "n": '"q"'},
                 "values": [[int(t), "-%d" % (t // 60)] for t in ts if t < 20 * 86400]}]
        rows = [r for r in rows if r["values"]]
        return self._send({"status": "success", "data": {"resultType": "matrix", "result": rows}}, url, q,
                          sum(len(r["values"]) for r in rows))

    def _send(self, answer, url, q, samples):
        body = json.dumps(answer).encode()
        self.server.sent.append({"path": url.path, "query": q["query"][0], "bytes": len(body),
                                 "series": len(answer["data"]["result"]), "samples": samples})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def pieces():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pieces)
    srv.sent = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()


def test_pieces_of_a_long_range_are_joined_and_each_request_is_logged(pieces):
    """28 days at 60 s is 40,321 points: four requests under the 11,000-point limit, each
    series joined whole and in order; the log holds each request as the server sent it."""
    client = PrometheusClient("http://127.0.0.1:%d" % pieces.server_address[1])
    got = client.query_range_arrays('DCGM_FI_DEV_FB_USED{gpu=~"0|1"}', 0, 28 * 86400, 60)
    every = np.arange(0, 28 * 86400 + 1, 60, dtype=float)
    assert [s.metric for s in got] == [{"gpu": "0"}, {"gpu": "1", "n": '"q"'}]
    assert _same(got[0].times, every) and _same(got[0].values, every // 60)
    assert _same(got[1].times, every[every < 20 * 86400]) and _same(got[1].values, -(every[every < 20 * 86400] // 60))
    assert len(pieces.sent) == 4 and max(s["samples"] for s in pieces.sent) <= 2 * MAX_POINTS
    assert [dict((k, e[k]) for k in ("path", "query", "bytes", "series", "samples")) for e in client.log] == pieces.sent
    assert all(isinstance(e["seconds"], float) and 0 <= e["seconds"] < 30 for e in client.log)
    # pieces of 10,999 steps (7.6 days): the second series ends (day 20) in the third
    assert [s["series"] for s in pieces.sent] == [2, 2, 2, 1]


def test_instant_queries_and_list_range_queries_are_logged_too(pieces):
    client = PrometheusClient("http://127.0.0.1:%d" % pieces.server_address[1])
    rows = client.query_range("up", 0, 600, 60)
    assert [len(r["values"]) for r in rows] == [11, 11]
    assert client.query("up", 600) == [{"metric": {"gpu": "0"}, "value": [1, "1"]}]
    assert [dict((k, e[k]) for k in ("path", "query", "bytes", "series", "samples")) for e in client.log] == pieces.sent
    assert [(e["path"], e["series"], e["samples"]) for e in client.log] == [(PATH, 2, 22), ("/api/v1/query", 1, 1)]


def test_a_result_that_is_not_series_is_an_error_not_a_traceback():
    with pytest.raises(PrometheusError, match="Prometheus answered q with a result that is not a list of series"):
        _decode(b'{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}')


def test_a_sample_that_is_no_number_is_an_error_naming_it():
    """A "]]" inside a value's string does not end the array early: the answer is read by
    json.loads, and the sample that is not a number is named."""
    body = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"],[3,"4]],[5"]]}]}}'
    with pytest.raises(PrometheusError, match=r'Prometheus answered q with samples that are not \[time, "value"\] pairs '
                                              r'\(\[\[1, "2"\], \[3, "4\]\],\[5"\]\]\)'):
        _decode(body)
