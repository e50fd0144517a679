"""A small stand-in for AWX 24.6.1's REST API (/api/v2), enough for roles/awx: the endpoints
the awx.awx modules and the controller_api lookup call, with AWX's response shapes (list pages
with count/next/results, objects with url, related and summary_fields), and the AWX behaviour
the role depends on, taken from AWX's source:

- a git project gets a sync started by AWX itself when it is created or its scm_url,
  scm_branch or scm_type changes (Project.save, FIELDS_TRIGGER_UPDATE in
  awx/main/models/projects.py); POST /projects/<id>/update/ starts another;
- a project's status is its running update's, else its last update's ("never updated"
  before any), "ok" or "missing" for a manual project (ProjectOptions._get_current_status);
- a job template is refused with {"playbook": ["Playbook not found for project."]} until a
  sync of its project succeeded (JobTemplateSerializer);
- an SCM inventory source is refused on a manual project on create ("Cannot use manual project
  for SCM-based inventory.", InventorySourceSerializer) but an existing one survives the
  project's switch to manual.

Every request is recorded (``requests``: method, path, time), so a test can check what was
written and in which order. No authentication is checked. Used by
tests/unit/plugins/module_utils/awx/test_awx_role_against_fake_api.py.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

PLAYBOOKS = ["playbooks/awx.yml", "playbooks/plan.yml", "playbooks/site.yml"]
ASSOCIATIONS = {"credentials", "labels", "instance_groups", "input_inventories", "notification_templates_started",
                "notification_templates_success", "notification_templates_error", "galaxy_credentials"}
KINDS = ("organizations", "credentials", "credential_types", "execution_environments", "projects", "inventories",
         "inventory_sources", "job_templates", "schedules", "project_updates", "labels", "instance_groups",
         "notification_templates")
TRIGGER_UPDATE = ("scm_url", "scm_branch", "scm_type", "scm_refspec")
ACTIVE = ("new", "pending", "waiting", "running")


class FakeAWX:
    """The objects, the sync behaviour and the request log; ``sync_seconds`` and
    ``sync_result`` say how long a project update runs and how it ends."""

    def __init__(self, sync_seconds: float = 1.0, sync_result: str = "successful", local_paths=("gpushare",),
                 sync_polls: int | None = None):
        self.lock = threading.RLock()
        self.objects = {kind: {} for kind in KINDS}
        self.next_id = 1
        self.requests = []
        self.sync_seconds, self.sync_result = sync_seconds, sync_result
        # With sync_polls, a sync runs until its own /project_updates/<id>/ was read that often
        # (a sync that outlasts whatever does not wait for it), not for sync_seconds.
        self.sync_polls = sync_polls
        self.local_paths = set(local_paths)
        self.add("organizations", {"name": "Default"})
        self.add("credentials", {"name": "Demo Credential", "organization": None, "credential_type": 1})

    # ------------------------------------------------------------------ model
    def add(self, kind: str, fields: dict) -> dict:
        with self.lock:
            obj = dict(fields, id=self.next_id, type=kind.rstrip("s"), _assoc={})
            self.next_id += 1
            self.objects[kind][obj["id"]] = obj
            if kind == "projects" and obj.get("scm_type"):
                self.start_update(obj, "manual")
            return obj

    def start_update(self, project: dict, launch_type: str) -> dict:
        return self.add("project_updates", {"name": project["name"], "project": project["id"], "launch_type": launch_type,
                                            "_start": time.time(), "_seconds": self.sync_seconds, "_result": self.sync_result,
                                            "_polls_needed": self.sync_polls, "_polls": 0})

    def update_status(self, update: dict) -> str:
        if update["_polls_needed"] is not None:
            if update["_polls"] < update["_polls_needed"]:
                return "running"
            update.setdefault("_done_at", time.time())
            return update["_result"]
        update["_done_at"] = update["_start"] + update["_seconds"]
        age = time.time() - update["_start"]
        if age < min(0.2, update["_seconds"]):
            return "pending"
        return "running" if age < update["_seconds"] else update["_result"]

    def updates_of(self, project: dict) -> list[dict]:
        return sorted((u for u in self.objects["project_updates"].values() if u["project"] == project["id"]),
                      key=lambda u: u["id"])

    def playbooks(self, project_id) -> list[str]:
        project = self.objects["projects"].get(project_id)
        if project is None:
            return []
        if not project.get("scm_type"):
            return PLAYBOOKS if project.get("local_path") in self.local_paths else []
        ok = [u for u in self.updates_of(project) if self.update_status(u) == "successful"]
        return PLAYBOOKS if ok else []

    def view(self, kind: str, obj: dict) -> dict:
        out = {k: copy.deepcopy(v) for k, v in obj.items() if not k.startswith("_")}
        url = "/api/v2/%s/%d/" % (kind, obj["id"])
        out["url"] = url
        out["related"] = {name: url + name + "/" for name in sorted(ASSOCIATIONS) + ["survey_spec", "update"]}
        summary = {}
        org = self.objects["organizations"].get(obj.get("organization"))
        if org:
            summary["organization"] = {"id": org["id"], "name": org["name"]}
        if kind == "projects":
            updates = self.updates_of(obj)
            active = [u for u in updates if self.update_status(u) in ACTIVE]
            done = [u for u in updates if self.update_status(u) not in ACTIVE]
            if active:
                summary["current_update"] = {"id": active[-1]["id"], "status": self.update_status(active[-1])}
            if done:
                summary["last_update"] = {"id": done[-1]["id"], "status": self.update_status(done[-1]),
                                          "failed": self.update_status(done[-1]) != "successful"}
            if not obj.get("scm_type"):
                out["status"] = "ok" if obj.get("local_path") in self.local_paths else "missing"
            elif active:
                out["status"] = self.update_status(active[-1])
            elif done:
                out["status"] = self.update_status(done[-1])
            else:
                out["status"] = "never updated"
            out["scm_revision"] = "0123abc" if done else ""
        if kind == "project_updates":
            status = self.update_status(obj)
            finished = status not in ACTIVE
            out.update(status=status, failed=finished and status != "successful", finished="2026-01-01T00:00:00Z" if finished else None,
                       started="2026-01-01T00:00:00Z", elapsed=0.0, scm_revision="0123abc" if finished else "")
        out["summary_fields"] = summary
        return out

    def matches(self, kind: str, obj: dict, params: dict) -> bool:
        view = self.view(kind, obj)
        ors = {k[4:]: v for k, v in params.items() if k.startswith("or__")}
        ands = {k: v for k, v in params.items() if not k.startswith("or__") and k not in ("page", "page_size", "order_by")}

        def one(key, value):
            if key == "organization__name":
                return view.get("summary_fields", {}).get("organization", {}).get("name") == value
            return str(view.get(key)) == value
        return all(one(k, v) for k, v in ands.items()) and (not ors or any(one(k, v) for k, v in ors.items()))

    # ------------------------------------------------------------------ API
    def handle(self, method: str, path: str, query: dict, body: dict | None) -> tuple[int, object]:
        with self.lock:
            self.requests.append({"method": method, "path": path, "query": query, "body": body, "time": time.time()})
            parts = [p for p in path.split("/") if p][2:]           # after api, v2
            if not parts:
                return 200, {"ping": "/api/v2/ping/"}
            kind = parts[0]
            if kind == "unified_job_templates":
                found = [self.view(k, o) for k in ("job_templates", "projects", "inventory_sources")
                         for o in self.objects[k].values() if self.matches(k, o, query)]
                return 200, {"count": len(found), "next": None, "previous": None, "results": found}
            if kind not in self.objects:
                return 404, {"detail": "Not found."}
            if len(parts) == 1:
                if method == "GET":
                    found = [self.view(kind, o) for o in self.objects[kind].values() if self.matches(kind, o, query)]
                    return 200, {"count": len(found), "next": None, "previous": None, "results": found}
                if method == "POST":
                    refused = self.refuse(kind, body, None)
                    if refused:
                        return 400, refused
                    return 201, self.view(kind, self.add(kind, body))
                return 405, {"detail": "Method not allowed."}
            obj = self.objects[kind].get(int(parts[1]))
            if obj is None:
                return 404, {"detail": "Not found."}
            if len(parts) == 2:
                if method == "GET":
                    if kind == "project_updates":
                        obj["_polls"] += 1
                    return 200, self.view(kind, obj)
                if method == "PATCH":
                    refused = self.refuse(kind, body, obj)
                    if refused:
                        return 400, refused
                    trigger = kind == "projects" and any(k in body and body[k] != obj.get(k) for k in TRIGGER_UPDATE)
                    obj.update(body)
                    if trigger and obj.get("scm_type"):
                        self.start_update(obj, "manual")
                    return 200, self.view(kind, obj)
                if method == "DELETE":
                    del self.objects[kind][obj["id"]]
                    return 204, None
                return 405, {"detail": "Method not allowed."}
            sub = parts[2]
            if kind == "projects" and sub == "update" and method == "POST":
                if not obj.get("scm_type"):
                    return 405, {"detail": "Method not allowed."}
                update = self.start_update(obj, "manual")
                return 202, dict(self.view("project_updates", update), project_update=update["id"])
            if sub == "survey_spec":
                if method == "GET":
                    return 200, obj.get("_survey", {})
                obj["_survey"] = body if method == "POST" else {}
                return 200, {}
            if sub in ASSOCIATIONS:
                ids = obj["_assoc"].setdefault(sub, [])
                if method == "GET":
                    target = "credentials" if "credential" in sub else sub if sub in self.objects else "inventories"
                    found = [self.view(target, self.objects[target][i]) for i in ids if i in self.objects[target]]
                    return 200, {"count": len(found), "next": None, "previous": None, "results": found}
                if body.get("disassociate"):
                    ids.remove(body["id"])
                elif body["id"] not in ids:
                    ids.append(body["id"])
                return 204, None
            return 404, {"detail": "Not found."}

    def refuse(self, kind: str, body: dict, existing: dict | None) -> dict | None:
        merged = dict(existing or {}, **body)
        if kind == "job_templates" and merged.get("playbook") not in self.playbooks(merged.get("project")):
            return {"playbook": ["Playbook not found for project."]}
        if kind == "inventory_sources" and existing is None and merged.get("source") == "scm":
            project = self.objects["projects"].get(merged.get("source_project"))
            if project is not None and not project.get("scm_type"):
                return {"source_project": ["Cannot use manual project for SCM-based inventory."]}
        return None

    # ------------------------------------------------------------------ what tests read
    def writes(self) -> list[dict]:
        return [r for r in self.requests if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]

    def named(self, kind: str, name: str) -> dict | None:
        return next((self.view(kind, o) for o in self.objects[kind].values() if o.get("name") == name), None)


def serve(awx: FakeAWX) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``awx`` on 127.0.0.1 in a thread: (server, base URL). Stop with server.shutdown()."""

    class Handler(BaseHTTPRequestHandler):
        def _do(self):
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            status, payload = awx.handle(self.command, split.path, dict(parse_qsl(split.query)), body)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-API-Product-Name", "AWX")
            self.send_header("X-API-Product-Version", "24.6.1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data:
                self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _do

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]
