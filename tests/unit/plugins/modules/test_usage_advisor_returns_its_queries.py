# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage_advisor module returns every request it sent to Prometheus as ``queries``, also
when it fails after reaching Prometheus (here: a Prometheus without dcgm-exporter series)."""

from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import parse_qs, urlparse

import yaml

from inventories import example_day
from playbooks import run_playbook


class _Empty(http.server.BaseHTTPRequestHandler):
    """A Prometheus that holds no series; records each request's path, query and answer size."""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
        self.server.seen.append({"path": url.path, "query": parse_qs(url.query)["query"][0], "bytes": len(body),
                                 "series": 0, "samples": 0})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_queries_sent_are_in_the_result(tmp_path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Empty)
    srv.seen = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    inventory = example_day()
    playbook = tmp_path / "advise.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
        {"gpushare.cluster.usage_advisor": {"prometheus_url": "http://127.0.0.1:%d" % srv.server_address[1],
                                            "teams": inventory["gpushare_teams"], "nodes": inventory["gpushare_nodes"],
                                            "workloads": inventory["gpushare_workloads"],
                                            "dest": str(tmp_path / "advise"), "timeout": 5}}]}]))
    try:
        rc, result, _err = run_playbook(playbook, "localhost,")
    finally:
        srv.shutdown()
    task = result["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert rc != 0 and "has no dcgm-exporter series" in task["msg"], task
    assert len(srv.seen) == 3
    assert [dict((k, q[k]) for k in ("path", "query", "bytes", "series", "samples")) for q in task["queries"]] == srv.seen
    assert all(0 <= q["seconds"] < 5 for q in task["queries"])
