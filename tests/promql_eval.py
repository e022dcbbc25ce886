"""A small PromQL evaluator for the tests: exactly the functions and operators the platform's cost rules and the cost
command's queries use, over series held in memory, parsed with promql-parser (a parser only). Anything else raises,
so a rule that starts using more fails its test instead of being evaluated wrongly.

Semantics follow Prometheus': an instant selector takes each series' latest sample in the 5 minutes up to the
evaluation time; a range selector `[d]` the samples in (t - d, t]; arithmetic and aggregation drop the metric name;
`* on (...) group_left (...)` keeps the left side's labels and adds the named ones from the right; one-to-one
matching with `on` keeps only those labels; `a or b` is a and the series of b whose labels (or `on` labels) a
lacks; a label set to "" is no label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import promql_parser as pp

LOOKBACK = 300.0
#: Prometheus' staleness marker: written when a series stops (a target no longer exposes it, a rule no longer
#: records it); an instant selector sees no series past it, a range selector skips it.
STALE = float("nan")
Labels = frozenset[tuple[str, str]]


def labels(name: str | None = None, **values: str) -> Labels:
    found = {k: v for k, v in values.items() if v != ""}
    if name is not None:
        found["__name__"] = name
    return frozenset(found.items())


@dataclass
class Store:
    """Series by label set (the name as `__name__`), each a list of (time in seconds, value) in time order."""

    series: dict[Labels, list[tuple[float, float]]] = field(default_factory=dict)

    def add(self, name: str, values: Mapping[str, str], points: Iterable[tuple[float, float]]) -> None:
        self.series.setdefault(labels(name, **values), []).extend(points)

    def append(self, key: Labels, t: float, value: float) -> None:
        self.series.setdefault(key, []).append((t, value))


Vector = dict[Labels, float]


def _matches(series: Labels, selector: pp.VectorSelector) -> bool:
    found = dict(series)
    if selector.name and found.get("__name__") != selector.name:
        return False
    for matcher in selector.matchers.matchers:
        value = found.get(matcher.name, "")
        op = str(matcher.op).rsplit(".", 1)[-1]
        if op in ("Equal", "NotEqual"):
            ok = (value == matcher.value) == (op == "Equal")
        elif op in ("Re", "NotRe"):
            ok = (re.fullmatch(matcher.value, value) is not None) == (op == "Re")
        else:
            raise NotImplementedError(f"matcher not evaluated here: {op}")
        if not ok:
            return False
    return True


def _drop_name(key: Labels) -> Labels:
    return frozenset((k, v) for k, v in key if k != "__name__")


def _keep(key: Labels, names: Iterable[str]) -> Labels:
    wanted = set(names)
    return frozenset((k, v) for k, v in key if k in wanted)


class Evaluator:
    def __init__(self, store: Store):
        self.store = store

    def query(self, expr: str, t: float) -> Vector | float:
        return self._eval(pp.parse(expr), t)

    # -------------------------------------------------------------------------------------------------- nodes

    def _eval(self, node: object, t: float) -> Vector | float:
        if isinstance(node, pp.NumberLiteral):
            return float(node.val)
        if isinstance(node, pp.ParenExpr):
            return self._eval(node.expr, t)
        if isinstance(node, pp.VectorSelector):
            return self._instant(node, t)
        if isinstance(node, pp.Call):
            return self._call(node, t)
        if isinstance(node, pp.AggregateExpr):
            return self._aggregate(node, t)
        if isinstance(node, pp.BinaryExpr):
            return self._binary(node, t)
        raise NotImplementedError(f"not evaluated here: {node!r}")

    def _instant(self, selector: pp.VectorSelector, t: float) -> Vector:
        result: Vector = {}
        for key, points in self.store.series.items():
            if _matches(key, selector):
                recent = [v for (at, v) in points if t - LOOKBACK < at <= t]
                if recent and recent[-1] == recent[-1]:  # NaN: stale
                    result[key] = recent[-1]
        return result

    def _range(self, matrix: pp.MatrixSelector, t: float) -> dict[Labels, list[float]]:
        width = matrix.range.total_seconds()
        result = {}
        for key, points in self.store.series.items():
            if _matches(key, matrix.vector_selector):
                inside = [v for (at, v) in points if t - width < at <= t and v == v]
                if inside:
                    result[key] = inside
        return result

    def _call(self, call: pp.Call, t: float) -> Vector:
        name, args = call.func.name, list(call.args)
        over_time: dict[str, Callable[[list[float]], float]] = {
            "sum_over_time": sum,
            "count_over_time": lambda vs: float(len(vs)),
            "max_over_time": max,
        }
        if name in over_time:
            return {_drop_name(k): over_time[name](vs) for k, vs in self._range(args[0], t).items()}
        if name == "vector":
            value = self._eval(args[0], t)
            assert isinstance(value, float)
            return {frozenset(): value}
        if name == "label_replace":
            vector = self._eval(args[0], t)
            assert isinstance(vector, dict)
            dst, replacement, src, regex = (a.val for a in args[1:])
            result = {}
            for key, value in vector.items():
                found = dict(key)
                match = re.fullmatch(regex, found.get(src, ""))
                if match:
                    new = match.expand(replacement.replace("$", "\\"))
                    found.pop(dst, None)
                    if new:
                        found[dst] = new
                result[frozenset(found.items())] = value
            return result
        raise NotImplementedError(f"function not evaluated here: {name}")

    def _aggregate(self, agg: pp.AggregateExpr, t: float) -> Vector:
        vector = self._eval(agg.expr, t)
        assert isinstance(vector, dict)
        op = str(agg.op)
        if agg.modifier is None:
            by: list[str] = []
        else:
            if str(agg.modifier.type).rsplit(".", 1)[-1] != "By":
                raise NotImplementedError("only `by` is evaluated here")
            by = list(agg.modifier.labels)
        groups: dict[Labels, list[float]] = {}
        for key, value in vector.items():
            groups.setdefault(_keep(key, by), []).append(value)
        fold: dict[str, Callable[[list[float]], float]] = {
            "sum": sum,
            "max": max,
            "count": lambda vs: float(len(vs)),
        }
        if op not in fold:
            raise NotImplementedError(f"aggregation not evaluated here: {op}")
        return {key: fold[op](values) for key, values in groups.items()}

    def _binary(self, expr: pp.BinaryExpr, t: float) -> Vector | float:
        op = str(expr.op)
        lhs, rhs = self._eval(expr.lhs, t), self._eval(expr.rhs, t)
        arithmetic: dict[str, Callable[[float, float], float]] = {
            "*": lambda a, b: a * b,
            "/": lambda a, b: a / b,
            "+": lambda a, b: a + b,
            "-": lambda a, b: a - b,
        }
        compare: dict[str, Callable[[float, float], bool]] = {
            "==": lambda a, b: a == b,
            ">": lambda a, b: a > b,
            "<": lambda a, b: a < b,
        }
        modifier = expr.modifier
        if modifier is not None and modifier.return_bool:
            raise NotImplementedError("`bool` is not evaluated here")
        if isinstance(lhs, float) and isinstance(rhs, float):
            if op not in arithmetic:
                raise NotImplementedError(op)
            return arithmetic[op](lhs, rhs)
        if isinstance(rhs, float) or isinstance(lhs, float):
            vector, scalar, left = (lhs, rhs, True) if isinstance(rhs, float) else (rhs, lhs, False)
            assert isinstance(vector, dict)
            assert isinstance(scalar, float)
            if op in compare:
                return {k: v for k, v in vector.items() if (compare[op](v, scalar) if left else compare[op](scalar, v))}
            if op in arithmetic:
                return {
                    _drop_name(k): (arithmetic[op](v, scalar) if left else arithmetic[op](scalar, v))
                    for k, v in vector.items()
                }
            raise NotImplementedError(op)
        assert isinstance(lhs, dict)
        assert isinstance(rhs, dict)
        matching = modifier.matching if modifier is not None else None
        on = list(matching.labels) if matching is not None else None
        if matching is not None and str(matching.type).rsplit(".", 1)[-1] != "Include":
            raise NotImplementedError("only `on (...)` matching is evaluated here")

        def signature(key: Labels) -> Labels:
            return _keep(key, on) if on is not None else _drop_name(key)

        if op == "and":
            present = {signature(k) for k in rhs}
            return {k: v for k, v in lhs.items() if signature(k) in present}
        if op == "or":
            present = {signature(k) for k in lhs}
            return {**lhs, **{k: v for k, v in rhs.items() if signature(k) not in present}}
        if op not in arithmetic:
            raise NotImplementedError(f"operator not evaluated here: {op}")
        card = str(modifier.card).rsplit(".", 1)[-1] if modifier is not None else "OneToOne"
        right: dict[Labels, tuple[Labels, float]] = {}
        for key, value in rhs.items():
            if signature(key) in right:
                raise ValueError(f"many-to-many matching: two right-hand series for {dict(signature(key))}")
            right[signature(key)] = (key, value)
        result: Vector = {}
        for key, value in lhs.items():
            match = right.get(signature(key))
            if match is None:
                continue
            if card == "ManyToOne":
                assert modifier is not None  # only a modifier (`group_left`) makes the match many-to-one
                include = list(modifier.group_labels or [])
                found = dict(_drop_name(key))
                for label in include:
                    found.pop(label, None)
                    found.update(_keep(match[0], [label]))
                out = frozenset(found.items())
            elif card == "OneToOne":
                out = _keep(key, on) if on is not None else _drop_name(key)
            else:
                raise NotImplementedError(f"matching not evaluated here: {card}")
            if out in result:
                raise ValueError(f"duplicate series for the result {dict(out)}")
            result[out] = arithmetic[op](value, match[1])
        return result


def record(store: Store, rules: list[dict[str, Any]], times: Iterable[float]) -> None:
    """Evaluate recording rules in order at each time, as Prometheus runs a rule group, storing what they record
    (their `labels` added) for the rules after them and for later queries."""
    evaluator = Evaluator(store)
    previous: list[set[Labels]] = [set() for _ in rules]
    for t in times:
        for index, rule in enumerate(rules):
            value = evaluator.query(rule["expr"], t)
            assert isinstance(value, dict), rule["expr"]
            now = set()
            for key, sample in value.items():
                found = dict(_drop_name(key))
                found.update(rule.get("labels", {}))
                found["__name__"] = rule["record"]
                now.add(frozenset(found.items()))
                store.append(frozenset(found.items()), t, sample)
            for gone in previous[index] - now:
                store.append(gone, t, STALE)
            previous[index] = now
