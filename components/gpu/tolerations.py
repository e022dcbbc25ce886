"""What the node agents the GPU stack installs tolerate (pure): the GPU operator's operands and NFD's worker, the
Neuron and EFA device plugins. Each runs on every node of the pools it serves, so it tolerates each of their taints
and the team taint (the teams' pools carry it), by key and effect whatever the value: a taint missing from the list
keeps the agent, and so the devices, off those nodes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..scheduling import ANY_TEAM_TAINT, Taint


def device_tolerations(pool_taints: Iterable[Taint], *, first: Sequence[Taint] = ()) -> list[dict[str, str]]:
    """Tolerations of `first` in its order, then of the pools' taints and the team taint, sorted; each key and effect
    once."""
    head = list(dict.fromkeys((t.key, t.effect) for t in first))
    rest = sorted({(t.key, t.effect) for t in (*pool_taints, ANY_TEAM_TAINT)} - set(head))
    return [Taint(key, "", effect).key_toleration() for key, effect in head + rest]
