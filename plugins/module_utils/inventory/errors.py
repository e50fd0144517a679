# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors that point a person at the inventory line to fix.

Every problem carries the inventory path (``gpushare_teams[1].priority``), the value
found and what is allowed, so the message can be acted on without reading code.
"""

from __future__ import annotations


class _NoValue:
    """Marks a problem that has no value to show (a missing key), as opposed to a value
    that is null in YAML (None), which is shown."""

    def __repr__(self) -> str:
        return "no value"


NO_VALUE = _NoValue()


class InventoryProblem(Exception):
    """One thing wrong in the inventory."""

    def __init__(self, path: str, message: str, value: object = NO_VALUE, allowed: str = "", hint: str = ""):
        self.path = path
        self.message = message
        self.value = value
        self.allowed = allowed
        self.hint = hint
        self.also: list[str] = []     # other paths with the same mistake (Problems.add_once)
        self.key = None               # what makes two mistakes the same (Problems.add_once)
        super().__init__(str(self))

    def __str__(self) -> str:
        # A message may end a sentence (a multi-line one may close with its own advice): the
        # parts that follow it are one sentence with it, and advice already given is not repeated.
        message = self.message.rstrip()
        tail = self.value is not NO_VALUE or self.allowed or self.hint
        text = "%s: %s" % (self.path, message[:-1] if tail and message.endswith(".") else message)
        if self.also:
            text += " (the same at %s)" % ", ".join(_beside(self.path, p) for p in self.also)
        if self.value is not NO_VALUE:
            text += " (got %s)" % _shown(self.value)
        if self.allowed:
            text += "; allowed: %s" % self.allowed
        if self.hint and self.hint.rstrip(".") not in message:
            text += ". %s" % self.hint
        return text

    @property
    def has_value(self) -> bool:
        return self.value is not NO_VALUE

    def as_dict(self) -> dict:
        return {"path": self.path, "message": self.message, "value": self.value if self.has_value else None,
                "allowed": self.allowed, "hint": self.hint}


def _beside(first: str, other: str) -> str:
    """``other`` from where it leaves ``first``'s mapping: gpus[2].schedule[0].hours beside
    hostvars[gpu01].gpushare_node.gpus[0].schedule[0].hours."""
    common = 0
    while common < min(len(first), len(other)) and first[common] == other[common]:
        common += 1
    cut = other.rfind(".", 0, common + 1)
    return other[cut + 1:] if cut > 0 else other


def gib(mib: float) -> str:
    """MiB as the GiB a person writes in ``memory_gib`` (two decimals at most, as nvidia-smi
    prints a MIG profile's memory): 9728 -> "9.5 GiB"."""
    return "%s GiB" % ("%.2f" % (mib / 1024.0)).rstrip("0").rstrip(".")


def _shown(value: object, limit: int = 80) -> str:
    """The value as YAML writes a scalar (null, true, false, else Python's repr), cut short."""
    if value is None or isinstance(value, bool):
        text = {None: "null", True: "true", False: "false"}[value]
    else:
        text = repr(value)
    return text if len(text) <= limit else "%s... (%d characters)" % (text[:limit], len(text))


class PlanInvalid(Exception):
    """The inventory has problems; nothing may be rendered or applied."""

    def __init__(self, problems: list[InventoryProblem]):
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = ["the inventory has %d problem(s); nothing was rendered or applied:" % len(self.problems)]
        lines += ["  - %s" % p for p in self.problems]
        return "\n".join(lines)


class Problems:
    """Collects problems so one run reports all of them, not just the first."""

    def __init__(self):
        self.items: list[InventoryProblem] = []

    def add(self, path: str, message: str, value: object = NO_VALUE, allowed: str = "", hint: str = "") -> None:
        self.items.append(InventoryProblem(path, message, value, allowed, hint))

    def add_once(self, key, path: str, message: str, value: object = NO_VALUE, allowed: str = "",
                 hint: str = "") -> None:
        """Like add, but a mistake repeated (the same ``key``: one window pasted under every GPU)
        is one problem that names the other paths, not one per copy."""
        first = next((p for p in self.items if p.key == key), None)
        if first is not None:
            first.also.append(path)
            return
        self.add(path, message, value, allowed, hint)
        self.items[-1].key = key

    def extend(self, problems) -> None:
        self.items.extend(problems)

    def raise_if_any(self) -> None:
        if self.items:
            raise PlanInvalid(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)
