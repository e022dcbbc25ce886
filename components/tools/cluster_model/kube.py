"""Kubernetes' scheduling rules, as plain functions over plain data: taints and tolerations, node selectors and
required node affinity, judged against the labels a kind of node can carry.

A node kind's labels are *domains*: for each key, the set of values its nodes may carry (`ANY` where Karpenter may
pick any value, for example the instance type). A selector matches a kind when some node of it could satisfy it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Any value: the key is always set on such nodes, to a value chosen at launch.
ANY: Final = None
Domains = Mapping[str, frozenset[str] | None]

#: Effects that keep a pod off a node (PreferNoSchedule only discourages).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(str(raw["key"]), str(raw.get("value", "")), str(raw["effect"]))

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint (k8s.io/api/core/v1 toleration.go): an empty key with `Exists` tolerates every key,
    an empty effect every effect; `Equal` (the default operator) needs the value too."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.key:
        return False
    return operator == "Exists" or str(toleration.get("value", "")) == taint.value


def untolerated(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Taint]) -> list[Taint]:
    """The blocking taints no toleration covers."""
    given = list(tolerations)
    return [t for t in taints if t.effect in BLOCKING_EFFECTS and not any(tolerates(x, t) for x in given)]


def _numbers(values: frozenset[str]) -> list[int]:
    return [int(v) for v in values if v.lstrip("-").isdigit()]


def expression_matches(expression: Mapping[str, Any], domains: Domains) -> bool:
    """Whether some node with these label domains satisfies one node selector requirement."""
    key, operator = expression["key"], expression["operator"]
    values = frozenset(str(v) for v in expression.get("values") or ())
    if key not in domains:
        return operator in ("NotIn", "DoesNotExist")
    domain = domains[key]
    if operator == "Exists":
        return True
    if operator == "DoesNotExist":
        return False
    if operator == "In":
        return domain is ANY or bool(domain & values)
    if operator == "NotIn":
        return domain is ANY or bool(domain - values)
    if operator in ("Gt", "Lt"):
        if domain is ANY:
            return True
        bound = int(next(iter(values)))
        numbers = _numbers(domain)
        return any(n > bound for n in numbers) if operator == "Gt" else any(n < bound for n in numbers)
    raise ValueError(f"unknown node selector operator {operator!r}")


def selector_matches(node_selector: Mapping[str, str], domains: Domains) -> bool:
    return all(
        expression_matches({"key": k, "operator": "In", "values": [v]}, domains) for k, v in node_selector.items()
    )


def affinity_matches(terms: tuple[tuple[Mapping[str, Any], ...], ...], domains: Domains) -> bool:
    """Required node affinity: the terms are ORed, the expressions of a term ANDed; no terms, no constraint."""
    return not terms or any(all(expression_matches(e, domains) for e in term) for term in terms)


def narrowed(
    domains: Domains, node_selector: Mapping[str, str], terms: tuple[tuple[Mapping[str, Any], ...], ...], key: str
) -> frozenset[str] | None:
    """The values of `key` a pod can still get on such nodes once its own selector and (first matching) affinity term
    narrow them: how a pod that pins `kubernetes.io/arch` escapes a pool that also allows another architecture."""
    domain = domains.get(key, frozenset())
    if key in node_selector:
        wanted = frozenset({node_selector[key]})
        domain = wanted if domain is ANY else domain & wanted
    matching = [t for t in terms if all(expression_matches(e, domains) for e in t)]
    if matching:
        union: set[str] = set()
        for term in matching:
            allowed = domain
            for e in term:
                if e["key"] != key:
                    continue
                values = frozenset(str(v) for v in e.get("values") or ())
                if e["operator"] == "In":
                    allowed = values if allowed is ANY else allowed & values
                elif e["operator"] == "NotIn" and allowed is not ANY:
                    allowed = allowed - values
            if allowed is ANY:
                return ANY
            union |= allowed
        domain = frozenset(union)
    return domain
