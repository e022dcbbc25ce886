"""The engine tier's scheduling (tests/engine/scheduling.py), driven as pytest-xdist drives it: the two longest
modules start first on the two processes, and a process is handed its next module only when it holds one test, the
one it waits with, never while a long test runs ahead of it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .scheduling import LONGEST_FIRST, LongestModuleFirst

#: The tier's modules in collection order, with their number of tests (the admission checks have the most).
MODULES = {
    "tests/engine/test_admission.py": 12,
    "tests/engine/test_dev_stack.py": 9,
    "tests/engine/test_fake_aws.py": 6,
    "tests/engine/test_first_up_faults.py": 5,
    "tests/engine/test_lifecycle.py": 5,
    "tests/engine/test_tools.py": 1,
}


class Process:
    """What the scheduler sees of a test process: the tests it is sent, and whether it was told to stop."""

    def __init__(self, name: str, handed_out: list[int]) -> None:
        self.name, self.shutting_down = name, False
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.handed_out = handed_out  # every test sent to any process, in the order they were sent

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)
        self.handed_out.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def scheduled() -> tuple[LongestModuleFirst, list[str], Process, Process]:
    # xdist's default: modules with the most tests first, which the longest-first rule must override.
    config: Any = SimpleNamespace(getvalue=lambda name: ["2*popen"], option=SimpleNamespace(loadscopereorder=True))
    scheduler = LongestModuleFirst(config)
    collection = [f"{module}::test_{i}" for module, count in MODULES.items() for i in range(count)]
    handed_out: list[int] = []
    first, second = Process("gw0", handed_out), Process("gw1", handed_out)
    for process in (first, second):
        scheduler.add_node(process)
        scheduler.add_node_collection(process, collection)
    scheduler.schedule()
    return scheduler, collection, first, second


def modules(collection: list[str], process: Process) -> list[str]:
    return list(dict.fromkeys(collection[i].split("::")[0] for i in process.sent))


def test_the_two_longest_modules_start_first_each_on_its_own_process() -> None:
    _, collection, first, second = scheduled()
    assert modules(collection, first) == [LONGEST_FIRST[0]]
    assert modules(collection, second) == [LONGEST_FIRST[1]]


def test_the_next_module_waits_until_a_process_holds_its_last_test() -> None:
    scheduler, collection, first, second = scheduled()
    lifecycle = list(second.sent)
    for done in lifecycle[:-2]:
        scheduler.mark_test_complete(second, done)
    # Two tests left (one running, one waiting): xdist's own rule would queue the dev stack behind them here.
    assert modules(collection, second) == [LONGEST_FIRST[1]]
    scheduler.mark_test_complete(second, lifecycle[-2])
    assert modules(collection, second) == [LONGEST_FIRST[1], LONGEST_FIRST[2]]
    assert modules(collection, first) == [LONGEST_FIRST[0]]


def test_after_the_longest_the_rest_go_in_collection_order_and_every_test_is_sent_once() -> None:
    scheduler, collection, first, second = scheduled()
    done: set[int] = set()
    while not (first.shutting_down and second.shutting_down):
        for process in (first, second):
            if pending := [i for i in process.sent if i not in done]:
                done.add(pending[0])
                scheduler.mark_test_complete(process, pending[0])
    assert sorted(first.sent + second.sent) == list(range(len(collection)))
    handed_out = list(dict.fromkeys(collection[i].split("::")[0] for i in first.handed_out))
    assert handed_out[:3] == list(LONGEST_FIRST)
    assert handed_out[3:] == [m for m in MODULES if m not in LONGEST_FIRST]
