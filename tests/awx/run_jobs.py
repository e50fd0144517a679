"""Runs jobs the way AWX runs them, without AWX: for a job template of the definitions
playbooks/awx.yml rendered, a private data directory like the one AWX prepares (the project
checkout, the inventory as one generated file, extra vars from the survey defaults plus the
survey answers or the schedule's extra data, the command line of the template's job type and
tags) is streamed with

    ansible-runner transmit DIR | docker run -i --network none EE ansible-runner worker \
        --private-data-dir=/runner | ansible-runner process DIR

(transmit through ansible_runner.run(streamer='transmit'), as AWX calls it; AWX streams the
same through receptor, awx/main/tasks/receptor.py), and the job events that come back are
asserted. The worker has no network: nothing is fetched at run time.

    python tests/awx/run_jobs.py --image gpushare-ee:latest --definitions build/awx/definitions.json \
        --inventory inventory-examples/four-gpu-server --work /tmp/awx-jobs
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ansible_runner
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / ".collections") not in sys.path:
    sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpushare.cluster.plugins.module_utils.awx.awx_schedules import launch_extra_vars, launch_problems  # noqa: E402


def project_files() -> list[str]:
    """The files of this checkout a project update would bring (tracked and new, not ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).exists()]


def private_data_dir(work: Path, template: dict, answers: dict, job_type: str) -> Path:
    """The directory AWX would hand to ansible-runner for a job of ``template``."""
    pdd = work / template["key"]
    shutil.rmtree(pdd, ignore_errors=True)
    for name in project_files():
        dest = pdd / "project" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest, follow_symlinks=False)
    (pdd / "env").mkdir()
    extra = launch_extra_vars(template, answers)
    (pdd / "env" / "extravars").write_text(yaml.safe_dump(extra))
    args = (["--check"] if job_type == "check" else []) + (["--tags", template["job_tags"]] if template["job_tags"] else [])
    (pdd / "env" / "cmdline").write_text(" ".join(args))
    (pdd / "env" / "settings").write_text(yaml.safe_dump({"suppress_ansible_output": True}))
    return pdd


def awx_inventory(inventory: Path) -> dict:
    """The inventory as AWX gives it to a job: imported from the project's inventory source
    (hosts.yml with its group_vars and host_vars) and written as one generated inventory."""
    out = subprocess.run(["ansible-inventory", "-i", str(inventory / "hosts.yml"), "--list", "--yaml", "--export"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return yaml.safe_load(out)


def run_job(pdd: Path, playbook: str, inventory: dict, image: str) -> tuple[str, list[dict], list[str], float]:
    """transmit | worker in the EE | process; (status, job events, the worker's command, seconds)."""
    start = time.monotonic()
    stream = pdd.with_suffix(".transmit")
    with stream.open("wb") as out:
        # The inventory goes in as data: runner writes it to inventory/hosts.json and the
        # worker runs ansible-playbook -i /runner/inventory/hosts.json (AWX: inventory/hosts).
        ansible_runner.run(streamer="transmit", _output=out, private_data_dir=str(pdd), playbook=playbook,
                           inventory=inventory)
    with stream.open("rb") as payload:
        worker = subprocess.Popen(["docker", "run", "-i", "--rm", "--network", "none", image,
                                   "ansible-runner", "worker", "--private-data-dir=/runner"],
                                  stdin=payload, stdout=subprocess.PIPE)
        process = subprocess.run(["ansible-runner", "process", str(pdd)], stdin=worker.stdout, check=False,
                                 stdout=subprocess.DEVNULL)
        worker.stdout.close()
        rcs = worker.wait(), process.returncode
    seconds = time.monotonic() - start
    if any(rcs):
        raise SystemExit("run_jobs: worker/process exit codes %s for %s" % (rcs, pdd))
    # `process` writes the worker's artifacts (status, rc, stdout, job_events/) to DIR/artifacts.
    artifacts = pdd / "artifacts"
    if not (artifacts / "status").is_file():
        raise SystemExit("run_jobs: no status in %s: %s" % (artifacts, sorted(p.name for p in artifacts.iterdir())))
    status = (artifacts / "status").read_text().strip()
    events = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    events.sort(key=lambda e: e.get("counter", 0))
    command = json.loads((artifacts / "command").read_text())["command"]
    return status, events, command, seconds


def stdout_of(events: list[dict]) -> str:
    return "\n".join(e.get("stdout", "") for e in events)


def check_job(name: str, status: str, events: list[dict], command: list[str], expect: dict) -> list[str]:
    """Problems of a job's outcome: its status, failed events, command line, expected lines,
    roles, and the window's configuration in what the gpu_operator role rendered."""
    problems = []
    for arg in expect["args"]:
        if arg not in command:
            problems.append("%s: %r not in the command the worker ran: %s" % (name, arg, command))
    if status != "successful":
        problems.append("%s: status %s" % (name, status))
    failed = [e for e in events if e.get("event") in ("runner_on_failed", "runner_on_unreachable")
              and not e.get("event_data", {}).get("ignore_errors")]
    for e in failed:
        problems.append("%s: failed task %r: %s" % (name, e["event_data"].get("task"), e.get("stdout", "")[:400]))
    text = stdout_of(events)
    for line in expect["lines"]:
        if line not in text:
            problems.append("%s: job output lacks %r" % (name, line))
    ran = {e.get("event_data", {}).get("role") for e in events if e.get("event") == "runner_on_ok"}
    for role in expect["roles"]:
        if role not in ran:
            problems.append("%s: no task of role %s ran (roles that ran: %s)" % (name, role, sorted(r for r in ran if r)))
    if expect.get("rendered"):
        # The files are written by gpushare.cluster.common's render.yml into <render dir>/gpu_operator/.
        results = [e.get("event_data", {}).get("res", {}) for e in events]
        rendered = [res for res in results if "/gpu_operator/" in str(res.get("dest", ""))
                    and re.search(expect["rendered"], json.dumps(res))]
        if not rendered:
            problems.append("%s: no file rendered for gpu_operator mentions %s (the window's configs)" % (name, expect["rendered"]))
    stats = [e for e in events if e.get("event") == "playbook_on_stats"]
    if not stats:
        problems.append("%s: no playbook_on_stats event (the stream ended early)" % name)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True)
    parser.add_argument("--definitions", type=Path, required=True)
    parser.add_argument("--inventory", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args(argv)
    definitions = json.loads(args.definitions.read_text())
    templates = {t["key"]: t for t in definitions["job_templates"]}
    zone = definitions["plan"]["timezone"]
    # The first schedule that starts a window: its time is the plan job's survey answer and
    # its extra data the render job's (as when that schedule fires).
    schedule = next(s for s in definitions["schedules"] if s["extra_data"]["gpushare_window"] != "none")
    window = next(w for w in definitions["plan"]["windows"] if w["name"] == schedule["extra_data"]["gpushare_window"])
    span = "%s (%s-%s)" % (window["name"], window["from"], window["until"])
    args.work.mkdir(parents=True, exist_ok=True)
    inventory = awx_inventory(args.inventory)
    jobs = [
        # The plan template launched through the API with only the preview time: the window
        # question is left to its default (auto), as AWX gives an optional question.
        ("plan", templates["plan"], {"gpushare_window_at": schedule["at"]}, "run",
         {"args": ["playbooks/plan.yml", "/runner/inventory/hosts.json"],
          "lines": ["Sharing window in force at %s %s: %s" % (schedule["at"], zone, span)], "roles": []}),
        # The GPU stack in check mode, render only, with the schedule's extra data.
        ("gpu_stack", templates["gpu_stack"], dict(schedule["extra_data"], gpushare_render_only="true"), "check",
         {"args": ["--check", "--tags", templates["gpu_stack"]["job_tags"], "playbooks/site.yml"],
          "lines": ["Sharing window chosen: %s" % span, "Rendered to "], "roles": ["gpu_operator", "kueue", "monitoring"],
          "rendered": r"gpushare-[a-z0-9.-]+-%s\b" % re.escape(window["name"])}),
    ]
    problems = []
    for name, template, answers, job_type, expect in jobs:
        problems.extend(launch_problems(template, answers))      # what AWX would answer 400 to
        pdd = private_data_dir(args.work, template, answers, job_type)
        status, events, command, seconds = run_job(pdd, template["playbook"], inventory, args.image)
        found = check_job(name, status, events, command, expect)
        problems.extend(found)
        print("job %s (%s, %s, extra vars %s): %s, %d events in %.0f s%s" % (
            name, template["playbook"], job_type, json.loads(json.dumps(launch_extra_vars(template, answers))),
            status, len(events), seconds, "" if found else "; " + "; ".join(expect["lines"])))
    if problems:
        print("run_jobs: %d problem(s)" % len(problems), file=sys.stderr)
        for p in problems:
            print("  - " + p, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
