"""How the engine tier's modules share the test processes (`make test-engine`: pytest-xdist, `--dist loadscope`).

Three modules each deploy the dev stack and take most of the tier's time; the others take a minute or less. Two
rules keep both processes busy to the end:

- **The longest module first** (`LONGEST_FIRST`, from each module's measured time), so the two longest start at
  once on different processes, where xdist's own order (most tests first) started the admission checks first.
- **A module is handed out when a process has nothing left to run.** xdist hands a process its next module once two
  or fewer of its tests are left, so a module of a few long tests (a deployment's destroy, a fault run) held the next
  module in its queue for half an hour while the other process sat idle. A process holding one test waits for the
  next one anyway (xdist runs a test once it knows which comes after it), so that is when the next module goes.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScopeScheduling

#: The modules that deploy the dev stack, longest first, with their wall time in `.ci/run` two at a time
#: (build/engine/timings-<module>.txt); every other module comes after them, in collection order.
LONGEST_FIRST = (
    "tests/engine/test_first_up_faults.py",  # 25 minutes: a first `up` cut six times, each repaired
    "tests/engine/test_lifecycle.py",  # the previous release, its upgrade, parts off and on, three faults
    "tests/engine/test_dev_stack.py",  # 12 minutes: up, a team stack, preview, refresh, destroy
)


class LongestModuleFirst(LoadScopeScheduling):
    """xdist's module-at-a-time scheduling, with the two rules above."""

    def _rank(self, scope: str) -> int:
        return LONGEST_FIRST.index(scope) if scope in LONGEST_FIRST else len(LONGEST_FIRST)

    def _assign_work_unit(self, node: Any) -> None:
        # The first unit of the lowest rank (a stable choice among the rest) goes next.
        scope = min(self.workqueue, key=self._rank)
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) <= 1:
            self._assign_work_unit(node)
