# Copyright: (c) 2026, gpushare.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small interpreter of the part of CEL the admission policies use, and of a
ValidatingAdmissionPolicy's evaluation, so the unit tests can ask what a rendered policy
would refuse. Written from the CEL language definition (github.com/google/cel-spec,
doc/langdef.md: grammar, ``has`` and ``exists`` macros, commutative ``&&``/``||`` that absorb
errors, no implicit conversions) and the Kubernetes documentation of ValidatingAdmissionPolicy
(variables, validations, message/messageExpression, matchConstraints, binding
namespaceSelector); it shares no code with the collection. The real thing runs on the twin
(tests/twin/test_enforcement.py).
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
)""", re.X)


class CelError(Exception):
    """A CEL runtime error (no such key, wrong type)."""


def tokens(text: str) -> list[tuple[str, object]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SyntaxError("CEL: cannot read %r" % text[pos:pos + 20])
        pos = m.end()
        if m.group("num"):
            out.append(("lit", int(m.group("num"))))
        elif m.group("str"):
            out.append(("lit", re.sub(r"\\(.)", r"\1", m.group("str")[1:-1])))
        elif m.group("op"):
            out.append(("op", m.group("op")))
        else:
            word = m.group("id")
            out.append(("lit", {"true": True, "false": False, "null": None}[word]) if word in ("true", "false", "null")
                       else ("op", "in") if word == "in" else ("id", word))
    return out + [("end", None)]


class _Parser:
    """Recursive descent over CEL's grammar (langdef.md, "Syntax"); builds tuples."""

    def __init__(self, text):
        self.toks, self.i = tokens(text), 0

    def peek(self, value=None):
        kind, val = self.toks[self.i]
        return (kind, val) if value is None else (kind == "op" and val == value)

    def take(self, value=None):
        tok = self.toks[self.i]
        if value is not None and not self.peek(value):
            raise SyntaxError("CEL: expected %r, got %r" % (value, tok[1]))
        self.i += 1
        return tok

    def parse(self):
        expr = self.expr()
        if self.peek()[0] != "end":
            raise SyntaxError("CEL: unexpected %r" % (self.peek()[1],))
        return expr

    def expr(self):
        cond = self.binary(0)
        if self.peek("?"):
            self.take("?")
            yes = self.expr()
            self.take(":")
            return ("?", cond, yes, self.expr())
        return cond

    LEVELS = [("||",), ("&&",), ("==", "!=", "<", "<=", ">", ">=", "in"), ("+", "-"), ("*", "/", "%")]

    def binary(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in self.LEVELS[level]:
            op = self.take()[1]
            left = (op, left, self.binary(level + 1))
        return left

    def unary(self):
        if self.peek("!"):
            self.take()
            return ("!", self.unary())
        if self.peek("-"):
            self.take()
            return ("neg", self.unary())
        return self.member()

    def args(self):
        self.take("(")
        out = []
        while not self.peek(")"):
            out.append(self.expr())
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        return out

    def member(self):
        node = self.primary()
        while True:
            if self.peek("."):
                self.take()
                name = self.take()[1]
                node = ("call", node, name, self.args()) if self.peek("(") else (".", node, name)
            elif self.peek("["):
                self.take()
                node = ("[]", node, self.expr())
                self.take("]")
            else:
                return node

    def primary(self):
        kind, val = self.take()
        if kind == "lit":
            return ("lit", val)
        if kind == "id":
            return ("fn", val, self.args()) if self.peek("(") else ("id", val)
        if val == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if val == "[":
            items = []
            while not self.peek("]"):
                items.append(self.expr())
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            return ("list", items)
        if val == "{":
            pairs = []
            while not self.peek("}"):
                key = self.expr()
                self.take(":")
                pairs.append((key, self.expr()))
                if not self.peek("}"):
                    self.take(",")
            self.take("}")
            return ("map", pairs)
        raise SyntaxError("CEL: unexpected %r" % (val,))


def parse(text: str):
    return _Parser(text).parse()


def identifiers(node) -> set[str]:
    """Every ``variables.NAME`` the expression reads."""
    found = set()
    if isinstance(node, tuple):
        if node[0] == "." and node[1] == ("id", "variables"):
            found.add(node[2])
        for part in node[1:]:
            if isinstance(part, (tuple, list)):
                for sub in (part if isinstance(part, list) else [part]):
                    found |= identifiers(sub)
    return found


def _bool(value):
    if not isinstance(value, bool):
        raise CelError("expected a bool, got %r" % (value,))
    return value


def evaluate(node, env: dict):
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "id":
        if node[1] not in env:
            raise CelError("undeclared reference %s" % node[1])
        return env[node[1]]
    if op == "list":
        return [evaluate(n, env) for n in node[1]]
    if op == "map":
        return {evaluate(k, env): evaluate(v, env) for k, v in node[1]}
    if op == ".":
        target = evaluate(node[1], env)
        if not isinstance(target, dict) or node[2] not in target:
            raise CelError("no such key: %s" % node[2])
        return target[node[2]]
    if op == "[]":
        target, key = evaluate(node[1], env), evaluate(node[2], env)
        try:
            return target[key]
        except (KeyError, IndexError, TypeError):
            raise CelError("no such key: %r" % (key,))
    if op == "?":
        return evaluate(node[2] if _bool(evaluate(node[1], env)) else node[3], env)
    if op in ("&&", "||"):
        # Commutative: an error on one side is absorbed when the other side decides.
        decisive = op == "||"
        try:
            left = _bool(evaluate(node[1], env))
        except CelError:
            if _bool(evaluate(node[2], env)) == decisive:
                return decisive
            raise
        if left == decisive:
            return decisive
        return _bool(evaluate(node[2], env))
    if op == "!":
        return not _bool(evaluate(node[1], env))
    if op == "neg":
        return -evaluate(node[1], env)
    if op == "fn":
        name, args = node[1], node[2]
        if name == "has":
            target = args[0]
            if target[0] != ".":
                raise SyntaxError("has() takes a field selection")
            obj = evaluate(target[1], env)
            if not isinstance(obj, dict):
                raise CelError("has() on a non-map")
            return target[2] in obj
        if name == "size":
            return len(evaluate(args[0], env))
        raise CelError("unknown function %s" % name)
    if op == "call":
        target, name, args = node[1], node[2], node[3]
        if name in ("exists", "all"):
            var = args[0][1]
            items = evaluate(target, env)
            results = [_bool(evaluate(args[1], dict(env, **{var: item}))) for item in items]
            return any(results) if name == "exists" else all(results)
        value = evaluate(target, env)
        params = [evaluate(a, env) for a in args]
        if name == "startsWith":
            return value.startswith(params[0])
        if name == "endsWith":
            return value.endswith(params[0])
        if name == "contains":
            return params[0] in value
        if name == "join":
            return (params[0] if params else "").join(value)
        raise CelError("unknown method %s" % name)
    left, right = evaluate(node[1], env), evaluate(node[2], env)
    if op == "in":
        return left in right
    if op == "+":
        if type(left) is not type(right):
            raise CelError("no matching overload for + on %s and %s" % (type(left).__name__, type(right).__name__))
        return left + right
    if op in ("==", "!="):
        return (left == right) == (op == "==")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


class _Variables(dict):
    """``variables``: each evaluated once, on first use (later ones may read earlier ones)."""

    def __init__(self, specs, env):
        super().__init__()
        self.specs, self.env = {v["name"]: parse(v["expression"]) for v in specs}, env

    def __contains__(self, key):
        return key in self.specs

    def __getitem__(self, key):
        if not dict.__contains__(self, key):
            dict.__setitem__(self, key, evaluate(self.specs[key], self.env))
        return dict.__getitem__(self, key)


def _rule_matches(rule, group, resource, operation, namespaced) -> bool:
    def has(values, value):
        return "*" in values or value in values
    scope = rule.get("scope", "*")
    return (has(rule["apiGroups"], group) and has(rule["operations"], operation)
            and ("*" in rule["resources"] and "/" not in resource or resource in rule["resources"])
            and (scope == "*" or scope == ("Namespaced" if namespaced else "Cluster")))


def _selector_matches(selector, labels) -> bool:
    for expr in selector.get("matchExpressions", []):
        present = expr["key"] in labels
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and not (present and value in expr["values"]):
            return False
        if expr["operator"] == "NotIn" and present and value in expr["values"]:
            return False
        if expr["operator"] == "Exists" and not present:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def admit(policy: dict, binding: dict, obj: dict, *, operation: str = "CREATE", resource: str = "",
          group: str = "", username: str = "alice", old: dict | None = None) -> list[str]:
    """The refusals (messages) ``policy`` through ``binding`` gives a request that creates or
    updates ``obj``; [] when it lets it through or does not match it. An expression that fails
    to evaluate refuses (failurePolicy Fail)."""
    namespace = obj["metadata"].get("namespace")
    resource = resource or obj["kind"].lower() + "s"
    if not any(_rule_matches(r, group, resource, operation, namespace is not None)
               for r in policy["spec"]["matchConstraints"]["resourceRules"]):
        return []
    ns_object = {"metadata": {"name": namespace, "labels": {"kubernetes.io/metadata.name": namespace}}}
    if namespace is not None and not _selector_matches(binding["spec"]["matchResources"]["namespaceSelector"],
                                                       ns_object["metadata"]["labels"]):
        return []
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    env = {"object": obj, "oldObject": old, "namespaceObject": ns_object,
           "request": {"operation": operation, "namespace": namespace, "userInfo": {"username": username}}}
    env["variables"] = _Variables(policy["spec"].get("variables", []), env)
    refusals = []
    for check in policy["spec"]["validations"]:
        try:
            ok = _bool(evaluate(parse(check["expression"]), env))
        except CelError as err:
            if policy["spec"].get("failurePolicy", "Fail") == "Fail":
                refusals.append("error: %s" % err)
            continue
        if not ok:
            message = check.get("message", "")
            if "messageExpression" in check:
                message = evaluate(parse(check["messageExpression"]), env)
            refusals.append(message)
    return refusals
