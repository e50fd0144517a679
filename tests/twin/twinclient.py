"""A small Kubernetes REST client for the cluster twin, on the standard library only.

It reads $GPUSHARE_TWIN_STATE/twin.env (written by up.sh) and talks to the apiserver with
the admin client certificate, verifying the server against the twin's CA.
"""
from __future__ import annotations

import http.client
import json
import os
import ssl
import time
import urllib.parse
from pathlib import Path


def state_dir() -> Path:
    return Path(os.environ.get("GPUSHARE_TWIN_STATE", "/tmp/gpushare-twin"))


def read_env(path: Path | None = None) -> dict[str, str]:
    path = path or state_dir() / "twin.env"
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key] = value
    return env


class ApiError(Exception):
    def __init__(self, method: str, path: str, status: int, body):
        self.status = status
        self.body = body
        reason = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path}: HTTP {status}: {reason}")


class Twin:
    def __init__(self, env: dict[str, str] | None = None, impersonate: tuple[str, str] | None = None):
        self.env = env or read_env()
        # (user, group): requests made as that user in that group (Impersonate-User and
        # Impersonate-Group headers; the twin's admin may impersonate anyone).
        self.impersonate = impersonate
        url = urllib.parse.urlsplit(self.env["TWIN_APISERVER"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=self.env["TWIN_CA"])
        self.ctx.load_cert_chain(self.env["TWIN_CLIENT_CERT"], self.env["TWIN_CLIENT_KEY"])

    def request(self, method: str, path: str, body=None,
                content_type: str = "application/json", ok=(200, 201, 202)):
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
        try:
            data = None
            headers = {"Accept": "application/json"}
            if self.impersonate:
                headers["Impersonate-User"], headers["Impersonate-Group"] = self.impersonate
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        if resp.status not in ok:
            raise ApiError(method, path, resp.status, parsed)
        return parsed

    def as_member(self, user: str, group: str) -> "Twin":
        """The same twin, every request made as ``user`` in ``group``."""
        return Twin(self.env, (user, group))

    def get(self, path: str):
        return self.request("GET", path)

    def create(self, path: str, obj: dict):
        return self.request("POST", path, obj)

    def delete(self, path: str):
        return self.request("DELETE", path, ok=(200, 202, 404))

    def apply(self, path: str, obj: dict, manager: str = "gpushare-twin-test"):
        """Server-side apply of OBJ at PATH (the object's own URL)."""
        query = urllib.parse.urlencode({"fieldManager": manager, "force": "true"})
        return self.request("PATCH", f"{path}?{query}", obj,
                            content_type="application/apply-patch+yaml")

    def patch_status_merge(self, path: str, patch: dict):
        return self.request("PATCH", f"{path}/status", patch,
                            content_type="application/merge-patch+json")

    def wait_for(self, what: str, fn, timeout: float = 90, interval: float = 0.5):
        """Polls FN until it returns something truthy; fails with WHAT and the last value."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def condition(obj: dict, ctype: str) -> dict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(obj: dict, ctype: str) -> bool:
    cond = condition(obj, ctype)
    return bool(cond) and cond.get("status") == "True"
