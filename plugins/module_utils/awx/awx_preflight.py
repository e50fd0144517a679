# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What roles/awx decides from AWX's answers before and between its writes (pure Python).

- ``named_object_problems``: the objects the role names but does not create (the
  organization, the Machine and kubeconfig credentials) must each exist exactly once before
  the first write. awx.awx looks them up by name only when it needs them (the credentials at
  the job templates, "Request to /api/v2/credentials/?name=... returned 0 items, expected 1"),
  which is after the execution environment, project, inventory and credential type exist.
- ``project_step``: a git project is usable once a sync of it succeeded; AWX starts one
  itself when it creates the project or its URL or branch changes (``Project.save`` in
  awx/main/models/projects.py, ``FIELDS_TRIGGER_UPDATE``), so the role waits for that one
  instead of starting a second, and starts one only when none is running and the project
  was never synced successfully (or a sync is asked for). The role reads the project again
  afterwards and goes on only when this says ``none``: nothing else is created before the
  project is usable.
"""

from __future__ import annotations

# Role option -> the variable a person sets (-e gpushare_awx_...), named in every message.
OPTIONS = {
    "organization": "gpushare_awx_organization",
    "machine_credential": "gpushare_awx_machine_credential",
    "kubeconfig_credential": "gpushare_awx_kubeconfig_credential",
}
# AWX's unified job states (awx/main/models/unified_jobs.py) and a project's own status
# (ProjectOptions: ok and missing for a manual project, never updated before a first sync).
ACTIVE = ("new", "pending", "waiting", "running")
FAILED = ("failed", "error", "canceled")


def _names(objects: list) -> list[str]:
    return sorted({o["name"] for o in objects or [] if isinstance(o, dict) and o.get("name")})


def _one_named(kind: str, plural: str, option: str, name: str, objects: list, hint: str = "") -> list[str]:
    matches = [o for o in objects or [] if isinstance(o, dict) and o.get("name") == name]
    if not matches:
        names = _names(objects)
        choices = ("set the option to one of: %s" % ", ".join(repr(n) for n in names)) if names else "AWX has no %s yet" % plural
        return ["%s: no %s named %r in AWX; create it%s or %s" % (option, kind, name, hint, choices)]
    if len(matches) > 1:
        where = ", ".join("%s (organization %s)" % (o.get("id"), ((o.get("summary_fields") or {}).get("organization") or {}).get("name", "none"))
                          for o in matches)
        return ["%s: %d %s are named %r in AWX (ids %s) and awx.awx looks %s up by name, needing exactly one; "
                "rename all but one" % (option, len(matches), plural, name, where, plural)]
    return []


def named_object_problems(found: dict, settings: dict) -> list[str]:
    """Every named object the role uses but does not create that AWX lacks or has twice.

    Args:
        found: what AWX lists, a dict: ``organizations`` and ``credentials``, lists of AWX
            objects (``name``, ``id``, ``summary_fields``) as /api/v2/<kind>/ returns them.
        settings: the role's names, a dict: ``organization``, ``machine_credential`` and
            ``kubeconfig_credential`` (empty: none attached), ``kubeconfig_type`` (the name of
            the credential type the role creates).

    Returns:
        One message per problem naming the option, the value and the fix; [] when all exist once.
    """
    problems = _one_named("organization", "organizations", OPTIONS["organization"], settings.get("organization"),
                          found.get("organizations"))
    for key in ("machine_credential", "kubeconfig_credential"):
        name = settings.get(key)
        if not name:
            continue
        hint = ""
        if key == "kubeconfig_credential":
            hint = (" (of the credential type %r, which this role creates: run it once without %s, then add the "
                    "credential)" % (settings.get("kubeconfig_type"), OPTIONS[key]))
        problems += _one_named("credential", "credentials", OPTIONS[key], name, found.get("credentials"), hint)
    return problems


def project_step(project: dict | None, changed: bool = False, sync: bool = False) -> dict:
    """What to do with the project before anything that uses it is created.

    Args:
        project: the project as /api/v2/projects/<id>/ returns it (``scm_type``, ``status``,
            ``local_path``, ``summary_fields.current_update`` while a sync runs,
            ``summary_fields.last_update``).
        changed: the project task created it or changed it (then AWX started a sync).
        sync: a sync is asked for on every run (awx_project_sync).

    Returns:
        A dict: ``action`` (``wait``: for the sync ``update_id`` already running; ``sync``:
        start one and wait; ``fail``: ``message`` says why; ``none``: usable as it is),
        ``update_id`` and ``message``.
    """
    if not project:
        return {"action": "fail", "update_id": None, "message": "the project is not in AWX after it was created"}
    name, status = project.get("name"), project.get("status")
    summary = project.get("summary_fields") or {}
    if not project.get("scm_type"):
        if status == "missing":
            return {"action": "fail", "update_id": None, "message":
                    "manual project %r: its folder %r is missing under AWX's projects root (/var/lib/awx/projects); "
                    "copy the checkout there (gpushare_awx_project_local_path) before the job templates can name its "
                    "playbooks" % (name, project.get("local_path"))}
        return {"action": "none", "update_id": None, "message": "manual project %r (%s)" % (name, status)}
    current = (summary.get("current_update") or {}).get("id")
    last = summary.get("last_update") or {}
    if current or status in ACTIVE:
        update = current or last.get("id")
        return {"action": "wait", "update_id": update, "message":
                "project %r: the sync AWX is running (project update %s, status %s) has not finished; the role waits "
                "for it rather than start another (a rerun waits again)" % (name, update, status)}
    if status == "successful":
        if sync and not changed:
            return {"action": "sync", "update_id": None, "message": "project %r: sync asked (awx_project_sync)" % name}
        return {"action": "none", "update_id": last.get("id"), "message": "project %r: synced (project update %s)"
                % (name, last.get("id"))}
    if changed and status in FAILED:
        return {"action": "fail", "update_id": last.get("id"), "message":
                "project %r: the sync AWX started for the new or changed project ended %s (project update %s, its "
                "output in AWX under Jobs); fix the URL, branch or the source control credential and run again"
                % (name, status, last.get("id"))}
    return {"action": "sync", "update_id": None, "message":
            "project %r: not synced successfully (status %s); one sync" % (name, status)}


__all__ = ["OPTIONS", "named_object_problems", "project_step"]
