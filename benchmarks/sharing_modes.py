# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measure the GPU sharing modes a card allows, on workload shapes like ours.

Run on a GPU node (Python 3.11+, PyTorch with CUDA, the NVIDIA driver's nvidia-smi and, for
MPS, nvidia-cuda-mps-control in PATH):

    python3 benchmarks/sharing_modes.py --out calibration.json [--seconds 10] [--quick]

Workload shapes (random weights, fixed seeds, bf16 by default; nothing is downloaded):

* embeddings: 12-layer 768-wide transformer encoder, batch 16 x 128 tokens, mean-pooled;
* classifier: 6-layer 512-wide encoder, batch 8 x 64 tokens, a class head;
* speech: 12-layer 1024-wide encoder on 4 x 750 frames of 80 features (speech-to-text-like);
* heavy: a neighbour that keeps the card busy, 8192^3 matrix products in a loop.

Every client is its own process (multiprocessing, spawn) running a closed loop: after a
warm-up, all clients of a case start at the same instant and run for --seconds; each reports
its throughput (inferences or matrix products per second) and the p50/p99 latency of one
inference (of one product for the heavy loop, timed in groups of 8).

Cases: each shape alone; five small services together (2 embeddings, 2 classifier, 1 speech);
one embeddings service next to four heavy loops; five heavy loops. Modes:

* timeslice: plain concurrent processes (the driver time-slices them, the default);
* mps_unlimited: an MPS control daemon of our own (private pipe and log folders), no limits;
* mps_equal_<cap>pct: MPS, every client with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=<cap> (20);
* mps_proportional: MPS, each client's percentage proportional to its need: the time one
  request takes alone on the whole card (p50 from the timeslice mode's alone cases), scaled
  so that the clients of a case add up to 100 %, at least 5 % each.
* MIG is measured only when it is already enabled; the benchmark never changes MIG mode,
  clocks, power limits or compute mode, and never resets the card.

Every case of every mode is measured ``--runs`` times (default 3), the runs one after the
other: one run's figures of one shape "alone" have differed by 1.7x between runs, while
ratios of contended figures measured in one run (MPS against time-slicing with the same
clients) agree across runs and harnesses.

The output (the calibration file, format 1) holds the card, the date, the command line, per
run, mode and case every client's figures and the totals (``runs``), a ``summary`` of ratios
for the usage advisor (the median over the runs of each figure) and their ``spread`` (per
figure: min, median, max and the runs it was measured in). It is rewritten after every case,
so a run that is cut short keeps what it measured. ``--summarize FILE`` recomputes the
summary and spread of a file from its per-client figures, without a GPU.
Without a GPU, ``--device cpu`` runs tiny shapes on the CPU to test the script itself.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

FORMAT = 1

SHAPES = {
    "embeddings": {"kind": "encoder", "d_model": 768, "layers": 12, "batch": 16, "seq": 128,
                   "input": "tokens", "vocab": 30522, "head": "mean_pool", "out": 768, "seed": 11,
                   "like": "an embeddings service behind an API"},
    "classifier": {"kind": "encoder", "d_model": 512, "layers": 6, "batch": 8, "seq": 64,
                   "input": "tokens", "vocab": 30522, "head": "first_token", "out": 8, "seed": 12,
                   "like": "a text classifier behind an API"},
    "speech": {"kind": "encoder", "d_model": 1024, "layers": 12, "batch": 4, "seq": 750,
               "input": "features", "features": 80, "head": "per_frame", "out": 1024, "seed": 13,
               "like": "a speech-to-text encoder on 15 s of audio (750 frames of 80 mel features)"},
    "heavy": {"kind": "matmul", "n": 8192, "group": 8, "seed": 14,
              "like": "a heavy neighbour (training-like): square matrix products in a loop"},
}
# --device cpu: the same code on shapes small enough for a CPU (tests the script, not a card).
CPU_SHAPES = {"embeddings": {"d_model": 64, "layers": 1, "batch": 2, "seq": 16, "vocab": 1000, "out": 64},
              "classifier": {"d_model": 64, "layers": 1, "batch": 2, "seq": 8, "vocab": 1000},
              "speech": {"d_model": 64, "layers": 1, "batch": 1, "seq": 32, "out": 64},
              "heavy": {"n": 256}}
SMALL = ("embeddings", "classifier", "speech")

CASES = {
    "alone_embeddings": ["embeddings"],
    "alone_classifier": ["classifier"],
    "alone_speech": ["speech"],
    "alone_heavy": ["heavy"],
    "five_small": ["embeddings", "embeddings", "classifier", "classifier", "speech"],
    "small_next_to_four_heavy": ["embeddings", "heavy", "heavy", "heavy", "heavy"],
    "five_heavy": ["heavy"] * 5,
}
CASE_ABOUT = {
    "alone_embeddings": "the embeddings shape alone",
    "alone_classifier": "the classifier shape alone",
    "alone_speech": "the speech shape alone",
    "alone_heavy": "one heavy matmul loop alone",
    "five_small": "five small inference services together: 2 embeddings, 2 classifier, 1 speech",
    "small_next_to_four_heavy": "one embeddings service next to four heavy matmul loops",
    "five_heavy": "five heavy matmul loops",
}
# One pool of processes serves every case of a mode whose clients all get the same limit.
POOL = ["embeddings", "embeddings", "classifier", "classifier", "speech"] + ["heavy"] * 5
POOL_CASES = list(CASES)
# mps_proportional: one pool per layout (the limits depend on the case's clients).
PROPORTIONAL_POOLS = [("five_small", ["alone_embeddings", "alone_classifier", "alone_speech", "five_small"]),
                      ("small_next_to_four_heavy", ["small_next_to_four_heavy"])]
# Per-request times (ms) used for proportional limits when the timeslice alone cases are missing.
NOMINAL_REQUEST_MS = {"embeddings": 2.2, "classifier": 1.5, "speech": 3.3, "heavy": 1.7}
MIN_CAP_PCT = 5
MODES = ("timeslice", "mps_unlimited", "mps_equal", "mps_proportional")

LOG_T0 = time.time()


def log(message):
    print("[%6.1fs] %s" % (time.time() - LOG_T0, message), flush=True)


# --------------------------------------------------------------------------- client processes

def _percentile(sorted_values, q):
    if not sorted_values:
        return None
    rank = max(0, min(len(sorted_values) - 1, int(math.ceil(q * len(sorted_values))) - 1))
    return sorted_values[rank]


class _Workload:
    """One shape on one device: ``step()`` runs one request (or one group of products)."""

    def __init__(self, shape_name, device, dtype_name):
        import torch  # pylint: disable=import-outside-toplevel
        from torch import nn  # pylint: disable=import-outside-toplevel

        self.torch = torch
        self.cuda = device == "cuda"
        if not self.cuda:
            torch.set_num_threads(1)
        shape = dict(SHAPES[shape_name])
        if not self.cuda:
            shape.update(CPU_SHAPES[shape_name])
        self.shape = shape
        dev = torch.device("cuda:0" if self.cuda else "cpu")
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
        torch.manual_seed(shape["seed"])
        if shape["kind"] == "matmul":
            n = shape["n"]
            self.items_per_step = shape["group"]
            self.unit = "matmuls"
            self.a = torch.randn(n, n, device=dev, dtype=dtype)
            self.b = torch.randn(n, n, device=dev, dtype=dtype)
            self.c = torch.empty(n, n, device=dev, dtype=dtype)
            self.step = self._matmuls
            return
        d = shape["d_model"]
        layer = nn.TransformerEncoderLayer(d, max(1, d // 64), 4 * d, dropout=0.0, batch_first=True)
        mods = nn.ModuleDict({
            "inp": (nn.Embedding(shape["vocab"], d) if shape["input"] == "tokens"
                    else nn.Linear(shape["features"], d)),
            "body": nn.TransformerEncoder(layer, shape["layers"], enable_nested_tensor=False),
            "out": nn.Linear(d, shape["out"]),
        })
        self.mods = mods.to(device=dev, dtype=dtype).eval()
        if shape["input"] == "tokens":
            self.x = torch.randint(0, shape["vocab"], (shape["batch"], shape["seq"]), device=dev)
        else:
            self.x = torch.randn(shape["batch"], shape["seq"], shape["features"], device=dev, dtype=dtype)
        self.items_per_step = 1
        self.unit = "inferences"
        self.step = self._inference

    def _matmuls(self):
        for _product in range(self.items_per_step):
            self.torch.matmul(self.a, self.b, out=self.c)

    def _inference(self):
        torch = self.torch
        with torch.inference_mode():
            h = self.mods["body"](self.mods["inp"](self.x))
            head = self.shape["head"]
            if head == "mean_pool":
                out = torch.nn.functional.normalize(self.mods["out"](h.mean(dim=1)), dim=-1)
            elif head == "first_token":
                out = self.mods["out"](h[:, 0]).softmax(-1)
            else:
                out = self.mods["out"](h).log_softmax(-1)
        return out

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def info(self):
        torch = self.torch
        info = {"unit": self.unit, "torch": torch.__version__}
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            info.update({"device_name": props.name, "sm_count": props.multi_processor_count,
                         "allocated_mib": round(torch.cuda.memory_allocated() / 2**20)})
        return info

    def run(self, warm_s, seconds, t_start):
        """Closed loop: wait for t_start, warm up for warm_s, then measure for seconds."""
        while time.time() < t_start:
            time.sleep(min(0.005, max(0.0, t_start - time.time())))
        t_measure = t_start + warm_s
        t_end = t_measure + seconds
        while time.time() < t_measure:
            self.step()
            self.sync()
        latencies = []
        begin = end = time.perf_counter()
        while True:
            s = time.perf_counter()
            self.step()
            self.sync()
            end = time.perf_counter()
            latencies.append((end - s) / self.items_per_step)
            if time.time() >= t_end:
                break
        elapsed = end - begin
        latencies.sort()
        items = len(latencies) * self.items_per_step
        return {"per_s": round(items / elapsed, 2), "unit": self.unit,
                "p50_ms": round(1000 * _percentile(latencies, 0.50), 3),
                "p99_ms": round(1000 * _percentile(latencies, 0.99), 3),
                "mean_ms": round(1000 * sum(latencies) / len(latencies), 3),
                "n": items, "elapsed_s": round(elapsed, 3)}


def _client_main(conn, shape_name, device, dtype_name, env):
    """A client process: build the shape, warm up, answer ("run", warm_s, seconds, t_start)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the controller decides when clients stop
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    t0 = time.time()
    try:
        work = _Workload(shape_name, device, dtype_name)
        for _warm in range(3):
            work.step()
        work.sync()
        warm_until = time.time() + (0.5 if work.cuda else 0.05)
        while time.time() < warm_until:
            work.step()
            work.sync()
        ready = {"ready": True, "pid": os.getpid(), "init_s": round(time.time() - t0, 2)}
        ready.update(work.info())
        conn.send(ready)
    except BaseException:  # pylint: disable=broad-except
        conn.send({"ready": False, "pid": os.getpid(), "error": traceback.format_exc(limit=6)})
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] != "run":
            work.sync()
            conn.close()
            os._exit(0)  # the driver releases the context; skips a slow interpreter teardown
        try:
            conn.send(work.run(*message[1:]))
        except BaseException:  # pylint: disable=broad-except
            conn.send({"error": traceback.format_exc(limit=6)})


@contextlib.contextmanager
def _environ(changes):
    """os.environ with ``changes`` (None removes a variable), restored afterwards."""
    saved = {key: os.environ.get(key) for key in changes}
    try:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Pool:
    """Client processes started together; cases run on subsets of them."""

    def __init__(self, clients, device, dtype_name, ready_timeout):
        """clients: list of dicts with shape, cap_pct (or None) and env (variables for the process)."""
        ctx = multiprocessing.get_context("spawn")
        self.clients = clients
        self.procs, self.conns, self.ready = [], [], []
        self.broken = None
        for client in clients:
            parent, child = ctx.Pipe()
            with _environ(client["env"]):
                proc = ctx.Process(target=_client_main, daemon=True,
                                   args=(child, client["shape"], device, dtype_name, client["env"]))
                proc.start()
            child.close()
            self.procs.append(proc)
            self.conns.append(parent)
        deadline = time.time() + ready_timeout
        for i, conn in enumerate(self.conns):
            self.ready.append(self._answer(i, conn, deadline - time.time()))
        self.errors = ["client %d (%s): %s" % (i, clients[i]["shape"], r["error"])
                       for i, r in enumerate(self.ready) if not r.get("ready")]

    def _answer(self, i, conn, timeout):
        try:
            if conn.poll(max(0.1, timeout)):
                return conn.recv()
        except (EOFError, OSError):
            pass
        return {"ready": False, "error": "no answer within the time allowed (process %s, exit code %s)"
                % ("alive" if self.procs[i].is_alive() else "dead", self.procs[i].exitcode)}

    def run_case(self, shapes, warm_s, seconds):
        """Run the first free clients of the given shapes together; one result per client."""
        chosen, used = [], set()
        for shape in shapes:
            index = next(i for i, c in enumerate(self.clients) if c["shape"] == shape and i not in used)
            used.add(index)
            chosen.append(index)
        t_start = time.time() + 0.5
        for i in chosen:
            self.conns[i].send(("run", warm_s, seconds, t_start))
        deadline = t_start + warm_s + seconds + 120
        results = []
        for i in chosen:
            answer = self._answer(i, self.conns[i], deadline - time.time())
            if answer.pop("ready", None) is False:  # no answer: a late one would land in the next case
                self.broken = "client %d (%s): %s" % (i, self.clients[i]["shape"], answer["error"])
            client = self.clients[i]
            entry = {"shape": client["shape"], "mps_active_thread_pct": client["cap_pct"]}
            if "sm_count" in self.ready[i]:
                entry["sm_count_seen_by_client"] = self.ready[i]["sm_count"]
            entry.update(answer)
            results.append(entry)
        return results

    def close(self):
        for conn in self.conns:
            with contextlib.suppress(Exception):
                conn.send(("quit",))
        for proc in self.procs:
            proc.join(15)
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


# --------------------------------------------------------------------------- MPS control daemon

class MpsError(RuntimeError):
    pass


class MpsDaemon:
    """An MPS control daemon with private pipe and log folders; only ever started and quit."""

    def __init__(self, base_dir, visible_devices):
        self.pipe_dir = os.path.join(base_dir, "pipe")
        self.log_dir = os.path.join(base_dir, "log")
        self.exe = shutil.which("nvidia-cuda-mps-control")
        self.env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.pipe_dir, CUDA_MPS_LOG_DIRECTORY=self.log_dir)
        self.env.pop("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", None)
        if visible_devices:
            self.env["CUDA_VISIBLE_DEVICES"] = visible_devices
        self.started = False
        self.stop_note = None
        self.start_note = None
        self.pids = []

    def client_env(self):
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": self.log_dir}

    def _control(self, command, timeout=10):
        return subprocess.run([self.exe], input=command + "\n", env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def start(self):
        if self.exe is None:
            raise MpsError("nvidia-cuda-mps-control not found in PATH (%s)" % os.environ.get("PATH", ""))
        for folder in (self.pipe_dir, self.log_dir):
            os.makedirs(folder, exist_ok=True)
        if self.daemon_pids():
            raise MpsError("an MPS control daemon already uses the pipe folder %s" % self.pipe_dir)
        out_path = os.path.join(self.log_dir, "start-output.txt")
        with open(out_path, "w", encoding="utf-8") as out:
            # files, not pipes: the daemon may keep its standard streams open
            proc = subprocess.run([self.exe, "-d"], env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=30, check=False)
        with open(out_path, encoding="utf-8", errors="replace") as out:
            said = out.read().strip()
        if proc.returncode != 0:
            raise MpsError("nvidia-cuda-mps-control -d exited with %d: %s" % (proc.returncode, said or "(no output)"))
        self.started = True
        deadline = time.time() + 10
        last = None
        while time.time() < deadline:
            try:
                last = self._control("get_server_list", timeout=5)
                if last.returncode == 0:
                    self.pids = self.daemon_pids()
                    return
            except subprocess.TimeoutExpired as exc:
                last = exc
            time.sleep(0.3)
        self.pids = self.daemon_pids()
        if not self.pids:
            raise MpsError("nvidia-cuda-mps-control -d returned 0 but no daemon runs or answers: %s; control.log: %s"
                           % (_describe(last), self.log_tail("control.log", 10)))
        self.start_note = "the daemon runs (pid %s) but get_server_list answered %s" % (self.pids, _describe(last))

    def daemon_pids(self):
        """Processes of a control daemon (-d) with this pipe folder (read from /proc; [] where unreadable)."""
        pids = []
        marker = ("CUDA_MPS_PIPE_DIRECTORY=" + self.pipe_dir).encode()
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    argv = handle.read().split(b"\0")
                if not argv[0].endswith(b"nvidia-cuda-mps-control") or b"-d" not in argv[1:]:
                    continue
                with open("/proc/%s/environ" % entry, "rb") as handle:
                    if marker in handle.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
        return pids

    def query(self, command):
        try:
            answer = self._control(command)
        except subprocess.TimeoutExpired:
            return "(no answer within 10 s)"
        return (answer.stdout + answer.stderr).strip()

    def log_tail(self, name, lines=20):
        path = os.path.join(self.log_dir, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read().splitlines()[-lines:]
        except OSError as exc:
            return ["(%s)" % exc]

    def stop(self):
        """quit, then wait until the daemon has exited (at most 30 s)."""
        if not self.started:
            return
        pids = self.pids or self.daemon_pids()
        try:
            answer = self._control("quit", timeout=30)
            self.stop_note = "quit: rc %d %s" % (answer.returncode, (answer.stdout + answer.stderr).strip())
        except subprocess.TimeoutExpired:
            self.stop_note = "quit: no answer within 30 s"
        deadline = time.time() + 30
        while time.time() < deadline:
            if pids:
                if not any(os.path.exists("/proc/%d" % pid) for pid in pids):
                    self.stop_note += "; daemon %s exited" % pids
                    break
            else:
                try:
                    if self._control("get_server_list", timeout=5).returncode != 0:
                        self.stop_note += "; the daemon answers no more"
                        break
                except subprocess.TimeoutExpired:
                    pass
            time.sleep(0.2)
        else:
            self.stop_note += "; the daemon was still there 30 s after quit"
        self.started = False


def _describe(result):
    if isinstance(result, subprocess.CompletedProcess):
        return "rc %d: %s" % (result.returncode, (result.stdout + result.stderr).strip())
    return repr(result)


# --------------------------------------------------------------------------- the card (read only)

def _smi(args, timeout=30):
    try:
        proc = subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True, timeout=timeout,
                              check=False, env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, repr(exc)
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip()
        return None, "nvidia-smi %s: rc %d: %s" % (" ".join(args), proc.returncode, said)
    return proc.stdout, None


CARD_FIELDS = [("name", "name"), ("memory.total", "memory_total_mib"), ("driver_version", "driver_version"),
               ("pci.device_id", "pci_device_id"), ("compute_cap", "compute_cap"),
               ("mig.mode.current", "mig_mode_current"), ("mig.mode.pending", "mig_mode_pending"),
               ("compute_mode", "compute_mode"), ("persistence_mode", "persistence_mode"),
               ("power.limit", "power_limit_w"), ("clocks.max.sm", "clocks_max_sm_mhz")]


def read_card(index):
    """What nvidia-smi says about GPU ``index`` (queries only). UUIDs are kept out of the file."""
    card, errors = {"index": index}, []
    for field, key in CARD_FIELDS:
        out, err = _smi(["--query-gpu=" + field, "--format=csv,noheader,nounits", "-i", str(index)])
        if err:
            errors.append(err)
            card[key] = None
            continue
        value = out.strip()
        if key in ("memory_total_mib", "clocks_max_sm_mhz"):
            with contextlib.suppress(ValueError):
                value = int(float(value))
        elif key == "power_limit_w":
            with contextlib.suppress(ValueError):
                value = float(value)
        card[key] = value
    out, err = _smi(["-L"])
    gpus, migs, uuid = 0, [], None
    if out:
        current = None
        for line in out.splitlines():
            stripped = line.strip()
            if stripped.startswith("GPU "):
                gpus += 1
                current = stripped.split(":", 1)[0].split()[1]
                if current == str(index) and "UUID: " in stripped:
                    uuid = stripped.split("UUID: ", 1)[1].rstrip(")")
            elif stripped.startswith("MIG ") and current == str(index) and "UUID: " in stripped:
                migs.append({"profile": stripped.split()[1], "uuid": stripped.split("UUID: ", 1)[1].rstrip(")")})
    else:
        errors.append(err)
    card["gpu_count_on_host"] = gpus
    out, err = _smi(["--version"])
    if out:
        for line in out.splitlines():
            if ":" in line:
                key, value = line.split(":", 1)
                key = key.strip().lower().replace(" ", "_").replace("-", "_")
                if key in ("nvidia_smi_version", "nvml_version", "driver_version", "cuda_version"):
                    card.setdefault("versions", {})[key] = value.strip()
    if errors:
        card["errors"] = errors
    return card, uuid, migs


# --------------------------------------------------------------------------- modes and cases

def _totals(clients, heavy_n):
    small = [c for c in clients if c.get("shape") in SMALL and "per_s" in c]
    heavy = [c for c in clients if c.get("shape") == "heavy" and "per_s" in c]
    totals = {}
    if small:
        totals["small_inferences_per_s"] = round(sum(c["per_s"] for c in small), 1)
        totals["small_p50_ms_range"] = [min(c["p50_ms"] for c in small), max(c["p50_ms"] for c in small)]
        totals["small_p99_ms_max"] = max(c["p99_ms"] for c in small)
    if heavy:
        n = heavy_n
        totals["heavy_matmuls_per_s"] = round(sum(c["per_s"] for c in heavy), 1)
        totals["heavy_tflops"] = round(totals["heavy_matmuls_per_s"] * 2 * n ** 3 / 1e12, 1)
    errors = [c for c in clients if "error" in c]
    if errors:
        totals["clients_failed"] = len(errors)
    return totals


class Benchmark:
    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.deadline = self.t0 + args.max_minutes * 60 if args.max_minutes else None
        self.doc = {}
        self.mps_base = None
        self.mps_daemon = None
        self.visible = None
        self.no_mps_dir = None

    def left_s(self):
        return None if self.deadline is None else self.deadline - time.time()

    def save(self):
        self.doc["elapsed_s"] = round(time.time() - self.t0, 1)
        write(self.doc, self.args.out)

    def case_cost_s(self):
        return self.args.warmup + self.args.seconds + 2

    def run_pool(self, mode, clients, cases):
        """Start a pool of clients, run the cases on it, record them under modes[mode]["cases"]."""
        entry = self.doc["modes"][mode]
        left = self.left_s()
        if left is not None and left < 40 + self.case_cost_s() * len(cases):
            for case in cases:
                entry["cases"][case] = {"skipped": "not enough of --max-minutes left"}
            self.save()
            return
        t = time.time()
        pool = Pool(clients, self.args.device, self.args.dtype, self.args.ready_timeout)
        try:
            log("%s: %d clients ready in %.1f s" % (mode, len(clients), time.time() - t))
            entry.setdefault("pools", []).append({
                "clients": [{"shape": c["shape"], "mps_active_thread_pct": c["cap_pct"],
                             **{k: v for k, v in r.items() if k not in ("pid",)}}
                            for c, r in zip(clients, pool.ready)],
                "start_s": round(time.time() - t, 1)})
            if self.mps_daemon is not None:
                entry["mps_server_list_when_ready"] = self.mps_daemon.query("get_server_list")
            apps, err = _smi(["--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"])
            entry.setdefault("compute_apps_when_ready", []).append(
                [line.strip() for line in (apps or err or "").splitlines() if line.strip()])
            if apps is not None:
                entry["mps_server_seen"] = "nvidia-cuda-mps-server" in apps
                log("%s: MPS server among the compute processes: %s" % (mode, entry["mps_server_seen"]))
            if pool.errors:
                entry["errors"] = entry.get("errors", []) + pool.errors
                for case in cases:
                    entry["cases"][case] = {"skipped": "clients failed to start", "errors": pool.errors}
                self.save()
                return
            for case in cases:
                left = self.left_s()
                if pool.broken:
                    entry["cases"][case] = {"skipped": "a client of the pool stopped answering: %s" % pool.broken}
                    continue
                if left is not None and left < self.case_cost_s() + 15:
                    entry["cases"][case] = {"skipped": "not enough of --max-minutes left"}
                    continue
                clients_out = pool.run_case(CASES[case], self.args.warmup, self.args.seconds)
                entry["cases"][case] = {"clients": clients_out, "totals": _totals(clients_out, self.doc["shapes"]["heavy"]["n"])}
                log("%s %s: %s" % (mode, case, json.dumps(entry["cases"][case]["totals"])))
                self.save()
        finally:
            t = time.time()
            pool.close()
            log("%s: clients stopped in %.1f s" % (mode, time.time() - t))
            self.save()

    def mode(self, mode, description, env, cap_of, daemon):
        """Run the pooled cases in one mode (cap_of: shape -> percentage or None)."""
        self.doc["modes"][mode] = entry = {"description": description, "cases": {}}
        self.mps_daemon = None
        try:
            if daemon:
                self.mps_daemon = self.start_daemon(mode, entry)
                if self.mps_daemon is None:
                    return
                env = dict(env, **self.mps_daemon.client_env())
            clients = [{"shape": s, "cap_pct": cap_of(s),
                        "env": dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=None if cap_of(s) is None else str(cap_of(s)))}
                       for s in POOL]
            self.run_pool(mode, clients, POOL_CASES)
        except Exception:  # pylint: disable=broad-except
            entry["error"] = traceback.format_exc(limit=6)
            log("%s failed: %s" % (mode, entry["error"]))
        finally:
            self.stop_daemon(entry)

    def proportional(self, mode, env):
        entry = self.doc["modes"][mode] = {
            "description": "MPS, each client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE proportional to its need: "
                           "the p50 time of one request alone on the whole card (timeslice mode), scaled so "
                           "that a case's clients add up to 100 %%, at least %d %% each" % MIN_CAP_PCT,
            "cases": {}}
        weights, source = {}, {}
        for shape in SHAPES:
            alone = self.doc["modes"].get("timeslice", {}).get("cases", {}).get("alone_" + shape, {})
            clients = alone.get("clients") or [{}]
            if clients[0].get("p50_ms"):
                weights[shape], source[shape] = clients[0]["p50_ms"], "timeslice alone_%s p50" % shape
            else:
                weights[shape], source[shape] = NOMINAL_REQUEST_MS[shape], "nominal (not measured)"
        entry["request_ms_used_as_need"] = {s: {"ms": weights[s], "from": source[s]} for s in SHAPES}
        entry["caps_pct"] = {}
        self.mps_daemon = None
        try:
            self.mps_daemon = self.start_daemon(mode, entry)
            if self.mps_daemon is None:
                return
            env = dict(env, **self.mps_daemon.client_env())
            for layout, cases in PROPORTIONAL_POOLS:
                shapes = CASES[layout]
                caps = proportional_caps([weights[s] for s in shapes])
                entry["caps_pct"][layout] = [{"shape": s, "pct": p} for s, p in zip(shapes, caps)]
                clients = [{"shape": s, "cap_pct": p, "env": dict(env, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(p))}
                           for s, p in zip(shapes, caps)]
                self.run_pool(mode, clients, cases)
            entry["cases"].setdefault("five_heavy", {"skipped": "identical clients: proportional limits are the "
                                                                "equal-limit case (mps_equal_*pct)"})
        except Exception:  # pylint: disable=broad-except
            entry["error"] = traceback.format_exc(limit=6)
            log("%s failed: %s" % (mode, entry["error"]))
        finally:
            self.stop_daemon(entry)

    def start_daemon(self, mode, entry):
        daemon = MpsDaemon(os.path.join(self.mps_base, mode), self.visible)
        entry["mps"] = {"pipe_directory": daemon.pipe_dir, "log_directory": daemon.log_dir}
        try:
            daemon.start()
        except (MpsError, OSError, subprocess.SubprocessError) as exc:
            entry["error"] = "MPS did not start: %s" % exc
            entry["mps"]["control_log_tail"] = daemon.log_tail("control.log")
            log("MPS did not start: %s" % exc)
            daemon.stop()
            self.save()
            return None
        entry["mps"]["daemon_pids"] = daemon.pids
        if daemon.start_note:
            entry["mps"]["start_note"] = daemon.start_note
        log("MPS control daemon started (pipe folder %s, pid %s)" % (daemon.pipe_dir, daemon.pids))
        return daemon

    def stop_daemon(self, entry):
        daemon, self.mps_daemon = self.mps_daemon, None
        if daemon is None:
            return
        daemon.stop()
        entry["mps"].update({"stopped": daemon.stop_note,
                             "control_log_tail": daemon.log_tail("control.log", 12),
                             "server_log_tail": daemon.log_tail("server.log", 12)})
        log("MPS control daemon stopped (%s)" % daemon.stop_note)
        self.save()

    def mig(self, migs):
        """Only with MIG already enabled: clients spread over the existing instances (time-sliced within one)."""
        entry = self.doc["mig"] = {
            "enabled": True, "instances": [m["profile"] for m in migs],
            "description": "MIG was already enabled: the whole-card modes above ran on the first MIG instance; "
                           "here the clients of a case are spread over the existing instances (client i on "
                           "instance i mod count). The MIG layout was not changed.",
            "modes": {}}
        self.doc["modes"]["mig_spread"] = {"description": entry["description"], "cases": {}}
        try:
            for case in ("five_small", "small_next_to_four_heavy"):
                clients = [{"shape": s, "cap_pct": None, "mig_instance": migs[i % len(migs)]["profile"],
                            "env": {"CUDA_VISIBLE_DEVICES": migs[i % len(migs)]["uuid"],
                                    "CUDA_MPS_PIPE_DIRECTORY": self.no_mps_dir,
                                    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": None}}
                           for i, s in enumerate(CASES[case])]
                self.mps_daemon = None
                self.run_pool("mig_spread", clients, [case])
        except Exception:  # pylint: disable=broad-except
            entry["error"] = traceback.format_exc(limit=6)
        entry["modes"] = self.doc["modes"].pop("mig_spread")
        self.save()

    def run(self):
        args = self.args
        self.doc = {
            "format": FORMAT,
            "about": "GPU sharing modes measured on workload shapes like gpushare's: small inference services "
                     "(transformer encoders, random weights, fixed seeds) and heavy matmul neighbours, each client "
                     "a separate process in a closed loop, all clients of a case started together. per_s: "
                     "inferences (or matrix products) per second of one client; p50/p99: latency of one inference "
                     "(of one product for heavy loops, timed in groups of 8). Nothing on the card was changed.",
            "tool": "benchmarks/sharing_modes.py",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable)] + sys.argv),
            "seconds_per_case": args.seconds,
            "warmup_seconds_per_case": args.warmup,
            "dtype": args.dtype,
            "device": args.device,
            "host": {"python": platform.python_version(), "os": platform.platform()},
            "shapes": {k: dict(v, **(CPU_SHAPES[k] if args.device == "cpu" else {})) for k, v in SHAPES.items()},
            "cases": CASE_ABOUT,
            "modes": {},
        }
        with contextlib.suppress(Exception):
            import torch  # pylint: disable=import-outside-toplevel
            self.doc["host"].update({"torch": torch.__version__, "torch_cuda": torch.version.cuda})
        card, uuid, migs = ({"device": "cpu"}, None, []) if args.device == "cpu" else read_card(args.gpu)
        self.doc["card"] = card
        mig_on = str(card.get("mig_mode_current", "")).lower() == "enabled"
        if args.device == "cpu":
            self.doc["mig"] = {"skipped": "--device cpu"}
            self.visible = None
        elif mig_on and migs:
            self.visible = migs[0]["uuid"]
            self.doc["scope"] = "MIG is enabled: CUDA sees MIG instances only; the modes ran on the first " \
                                "instance (%s)" % migs[0]["profile"]
        elif mig_on:
            self.doc["mig"] = {"skipped": "MIG enabled but no MIG instance exists; the benchmark never creates one"}
            self.visible = None
        else:
            self.doc["mig"] = {"skipped": "MIG disabled on this card; the benchmark never changes MIG mode"
                               if card.get("mig_mode_current") else
                               "MIG mode unknown (%s); the benchmark never changes MIG mode" % card.get("errors")}
            self.visible = uuid if card.get("gpu_count_on_host", 1) > 1 else None
        self.save()

        self.doc["runs"] = []
        self.save()
        self.mps_base = args.mps_dir or tempfile.mkdtemp(prefix="gpushare-mps-")
        os.makedirs(self.mps_base, exist_ok=True)
        self.no_mps_dir = tempfile.mkdtemp(prefix="gpushare-no-mps-")
        try:
            for number in range(1, args.runs + 1):
                # one run: every mode and case; self.doc["modes"] is this run's while it runs
                run = {"run": number, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       "modes": {}}
                self.doc["runs"].append(run)
                self.doc["modes"] = run["modes"]
                log("run %d of %d" % (number, args.runs))
                self.run_modes(migs if mig_on else [])
                run["complete"] = True
                self.save()
        finally:
            self.doc.pop("modes", None)
        self.doc["complete"] = all(r.get("complete") for r in self.doc["runs"])
        self.save()
        shutil.rmtree(self.no_mps_dir, ignore_errors=True)
        if not args.mps_dir:
            shutil.rmtree(self.mps_base, ignore_errors=True)

    def run_modes(self, migs):
        """Every mode once (one run)."""
        args = self.args
        # Plain processes get an empty pipe folder: they can never reach an MPS daemon by accident.
        base_env = {"CUDA_MPS_PIPE_DIRECTORY": self.no_mps_dir, "CUDA_MPS_LOG_DIRECTORY": None,
                    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": None}
        if self.visible:
            base_env["CUDA_VISIBLE_DEVICES"] = self.visible
        if os.path.exists("/tmp/nvidia-mps/control"):
            self.doc["note_default_mps"] = "an MPS control daemon seems to run with the default pipe folder " \
                                           "/tmp/nvidia-mps; this benchmark's plain processes do not use it"
        cap = args.equal_cap
        self.mps_daemon = None
        self.doc["equal_cap_pct"] = cap
        wanted = args.modes
        if "timeslice" in wanted:
            self.mode("timeslice", "plain concurrent processes (no MPS daemon): the driver time-slices the card",
                      base_env, lambda s: None, daemon=False)
        if "mps_unlimited" in wanted:
            self.mode("mps_unlimited", "MPS control daemon of this run, no per-client limit", base_env,
                      lambda s: None, daemon=True)
        if "mps_equal" in wanted:
            self.mode("mps_equal_%dpct" % cap, "MPS, every client CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d" % cap,
                      base_env, lambda s: cap, daemon=True)
        if "mps_proportional" in wanted:
            self.proportional("mps_proportional", base_env)
        if migs:
            self.mig(migs)


def proportional_caps(weights):
    """Integer percentages proportional to weights, adding up to about 100, each at least MIN_CAP_PCT."""
    total = float(sum(weights))
    return [max(MIN_CAP_PCT, int(round(100.0 * w / total))) for w in weights]


# --------------------------------------------------------------------------- summary

def _case(doc, mode, case):
    return doc.get("modes", {}).get(mode, {}).get("cases", {}).get(case, {})


def _client(doc, mode, case, shape):
    for client in _case(doc, mode, case).get("clients", []):
        if client.get("shape") == shape and "per_s" in client:
            return client
    return None


def _ratio(a, b, digits=3):
    if a is None or not b:
        return None
    return round(a / b, digits)


def summarize(doc):
    """The figures of one run (``doc["modes"]``). "Alone" means the shape alone on the whole card
    without MPS. The usage advisor reads the ``*_vs_*`` ratios of contended figures: the same
    clients in the same case, one mode against another, measured in the same run (calibration.py
    says which and why); the ratios to "alone" are kept for the record."""
    modes = doc.get("modes", {})
    equal = "mps_equal_%spct" % doc.get("equal_cap_pct", 20)
    if equal not in modes:
        equal = next((m for m in modes if m.startswith("mps_equal_")), equal)
    labels = {"timeslice": "timeslice", "mps_unlimited": "mps_unlimited", equal: "mps_equal_cap",
              "mps_proportional": "mps_proportional_cap"}
    alone = {s: _client(doc, "timeslice", "alone_" + s, s) for s in SHAPES}
    alone_per_s = {s: (c["per_s"] if c else None) for s, c in alone.items()}
    s = {"reference": "alone = the shape alone on the whole card without MPS (timeslice mode, alone_<shape>); "
                      "small = inference services; heavy = 8192^3 matmul loops",
         "equal_cap_pct": doc.get("equal_cap_pct"),
         "alone_per_s": alone_per_s,
         "alone_p50_ms": {k: (c["p50_ms"] if c else None) for k, c in alone.items()}}

    def five_small_total(mode):
        return _case(doc, mode, "five_small").get("totals", {}).get("small_inferences_per_s")

    base = five_small_total("timeslice")
    s["mps_vs_timeslice_small_inference_throughput"] = _ratio(five_small_total("mps_unlimited"), base)
    s["mps_equal_cap_vs_timeslice_small_inference_throughput"] = _ratio(five_small_total(equal), base)
    s["mps_proportional_cap_vs_timeslice_small_inference_throughput"] = _ratio(five_small_total("mps_proportional"), base)
    for mode, label in labels.items():
        clients = [c for c in _case(doc, mode, "five_small").get("clients", []) if "per_s" in c]
        if clients and all(alone_per_s.get(c["shape"]) for c in clients):
            # 1.0: the five together do as much as one card running them one after another
            s[label + "_five_small_sum_of_alone_fractions"] = round(
                sum(c["per_s"] / alone_per_s[c["shape"]] for c in clients), 3)
    limited_name = {"timeslice": "timeslice", "mps_unlimited": "mps_unlimited", equal: "mps_limited",
                    "mps_proportional": "mps_proportional"}
    for mode, label in limited_name.items():
        small = _client(doc, mode, "small_next_to_four_heavy", "embeddings")
        if small and alone["embeddings"]:
            s[label + "_small_next_to_heavy_throughput_ratio"] = _ratio(small["per_s"], alone["embeddings"]["per_s"])
            s[label + "_small_next_to_heavy_p50_latency_ratio"] = _ratio(small["p50_ms"], alone["embeddings"]["p50_ms"])
            s[label + "_small_next_to_heavy_p50_ms"] = small["p50_ms"]
            s[label + "_small_next_to_heavy_p99_ms"] = small["p99_ms"]
        heavy = _case(doc, mode, "small_next_to_four_heavy").get("totals", {}).get("heavy_matmuls_per_s")
        if heavy and alone_per_s.get("heavy"):
            s[label + "_four_heavy_next_to_small_total_vs_one_alone"] = _ratio(heavy, alone_per_s["heavy"])
        five = _case(doc, mode, "five_heavy").get("totals", {}).get("heavy_matmuls_per_s")
        if five and alone_per_s.get("heavy"):
            s[label + "_five_heavy_total_vs_one_alone"] = _ratio(five, alone_per_s["heavy"])
    for mode, label in (("mps_unlimited", "mps_unlimited"), (equal, "mps_equal_cap"),
                        ("mps_proportional", "mps_proportional_cap")):
        ratios = {}
        for shape in SHAPES:
            capped = _client(doc, mode, "alone_" + shape, shape)
            if capped and alone_per_s.get(shape):
                ratios[shape] = _ratio(capped["per_s"], alone_per_s[shape])
        if ratios:
            s[label + "_alone_vs_whole_card"] = ratios
    equal_alone = s.get("mps_equal_cap_alone_vs_whole_card", {})
    # the heaviest small service (speech) capped at the equal percentage, against alone on the whole card
    s["mps_equal_cap_heavier_service_ratio"] = equal_alone.get("speech")
    s["mps_proportional_cap_heavier_service_ratio"] = s.get("mps_proportional_cap_alone_vs_whole_card", {}).get("speech")
    # Contended against contended, same run: the advisor's figures (stable across runs and harnesses).
    ts_small = _client(doc, "timeslice", "small_next_to_four_heavy", "embeddings")
    for mode, label in (("mps_unlimited", "mps_unlimited"), (equal, "mps_equal_cap"),
                        ("mps_proportional", "mps_proportional")):
        small = _client(doc, mode, "small_next_to_four_heavy", "embeddings")
        if small and ts_small:
            s[label + "_vs_timeslice_small_next_to_heavy_throughput"] = _ratio(small["per_s"], ts_small["per_s"])
    speech_unlimited = _client(doc, "mps_unlimited", "five_small", "speech")
    speech_equal = _client(doc, equal, "five_small", "speech")
    if speech_unlimited and speech_equal:
        # the heaviest of the five small services under the equal limit, against MPS without limits
        s["mps_equal_cap_vs_unlimited_heavier_service_throughput"] = _ratio(speech_equal["per_s"],
                                                                            speech_unlimited["per_s"])
    heavy_ts = _case(doc, "timeslice", "five_heavy").get("totals", {}).get("heavy_matmuls_per_s")
    heavy_mps = _case(doc, "mps_unlimited", "five_heavy").get("totals", {}).get("heavy_matmuls_per_s")
    if heavy_ts and heavy_mps:
        # five heavy loops time-sliced against the same five under MPS (no context switches): switching's cost
        s["timeslice_vs_mps_five_heavy_throughput"] = _ratio(heavy_ts, heavy_mps)
    caps = modes.get("mps_proportional", {}).get("caps_pct")
    if caps:
        s["proportional_caps_pct"] = caps
    seen = {m: e["mps_server_seen"] for m, e in modes.items() if m.startswith("mps") and "mps_server_seen" in e}
    if seen:
        # nvidia-smi listed nvidia-cuda-mps-server while the clients were up: they really ran under MPS
        s["mps_server_seen"] = seen
    failed = {m: e.get("error") for m, e in modes.items() if e.get("error")}
    if failed:
        s["modes_failed"] = failed
    return s


def _flatten(summary, prefix=""):
    """{"a": {"b": 1.0}} -> {"a.b": 1.0}: the numeric figures of a summary."""
    out = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update(_flatten(value, prefix + key + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[prefix + key] = value
    return out


def _replace(summary, figures, prefix=""):
    """``summary`` with each numeric figure replaced by ``figures[its flattened key]``."""
    out = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out[key] = _replace(value, figures, prefix + key + ".")
        else:
            out[key] = figures.get(prefix + key, value)
    return out


def summarize_runs(doc):
    """(summary, spread) over the runs of ``doc`` (a file without ``runs`` is one run): each
    figure's median over the runs that measured it, and per figure its min, median, max and
    number of runs."""
    runs = doc.get("runs") or ([{"modes": doc.get("modes", {})}] if "modes" in doc else [])
    per_run = [summarize(dict(doc, modes=r.get("modes", {}))) for r in runs] or [summarize(dict(doc, modes={}))]
    for r, s in zip(runs, per_run):
        r["summary"] = s
    values = {}
    for s in per_run:
        for key, value in _flatten(s).items():
            values.setdefault(key, []).append(value)
    spread, medians = {}, {}
    for key, vs in values.items():
        medians[key] = round(statistics.median(vs), 3)
        spread[key] = {"min": min(vs), "median": medians[key], "max": max(vs), "runs": len(vs)}
    merged = {}
    for s in per_run:        # every key any run has, the last run's non-numeric values
        merged.update(s)
    return _replace(merged, medians), spread


def write(doc, path):
    """``doc`` with its summary and spread over the runs, to ``path`` (atomically)."""
    doc["summary"], doc["spread"] = summarize_runs(doc)
    doc["runs_done"] = len(doc.get("runs") or [None])
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        # while a run runs, doc["modes"] is runs[-1]["modes"]: written once
        json.dump({k: v for k, v in doc.items() if not (k == "modes" and doc.get("runs"))}, handle, indent=1)
        handle.write("\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- main

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="calibration JSON file to write")
    parser.add_argument("--runs", type=int, default=3,
                        help="measure every mode and case this many times; the summary is each figure's median and "
                             "the spread its min and max (default 3)")
    parser.add_argument("--summarize", metavar="FILE", default=None,
                        help="recompute the summary and spread of a calibration file from its per-client figures "
                             "(no GPU); written to --out, or FILE itself without it")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per case (default 10)")
    parser.add_argument("--quick", action="store_true", help="3 s per case and a short warm-up (a smoke test)")
    parser.add_argument("--warmup", type=float, default=None, help="unmeasured seconds before each case (default 1)")
    parser.add_argument("--gpu", type=int, default=0, help="nvidia-smi index of the GPU to use (default 0)")
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    parser.add_argument("--equal-cap", type=int, default=20,
                        help="MPS active thread percentage of every client in the equal-limit mode (default 20)")
    parser.add_argument("--mps-dir", default=None,
                        help="folder for the MPS daemons' <mode>/pipe and <mode>/log (default: a new temporary folder)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated subset of %s (default: all)" % ",".join(MODES))
    parser.add_argument("--max-minutes", type=float, default=None, help="skip the cases that would end later")
    parser.add_argument("--ready-timeout", type=float, default=240, help="seconds for the clients to start")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: tiny shapes on the CPU, only to test this script without a GPU")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 3.0)
    if args.warmup is None:
        args.warmup = 0.3 if args.quick else 1.0
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown:
        parser.error("unknown --modes: %s (choose from %s)" % (",".join(unknown), ",".join(MODES)))
    if not 0 < args.equal_cap <= 100:
        parser.error("--equal-cap must be 1..100")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not args.out and not args.summarize:
        parser.error("--out is required (or --summarize FILE)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.summarize:
        with open(args.summarize, encoding="utf-8") as handle:
            doc = json.load(handle)
        write(doc, args.out or args.summarize)
        log("wrote %s" % (args.out or args.summarize))
        return 0

    def terminate(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    bench = Benchmark(args)
    try:
        bench.run()
    finally:
        daemon = getattr(bench, "mps_daemon", None)
        if daemon is not None:
            daemon.stop()
    log("wrote %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
