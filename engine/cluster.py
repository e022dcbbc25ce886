"""A Kubernetes control plane in a box: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, all
inside a network namespace that this module makes, with only loopback up.

**The network rule.** Nothing the engine tier starts may send a packet anywhere but loopback. Every process (the
control plane, kwok, and later the Pulumi CLI with its plugins) runs with `ip netns exec <ns>`, in a namespace whose
only interface is `lo`; `Box.start` checks that before it starts anything. The API server will try to call webhooks
and pods at service and pod addresses: inside the namespace those connections fail at once (no route), and nothing
leaves the machine.

Nodes have no kubelet: kwok plays every node marked with `KWOK_ANNOTATION`, answers their heartbeats and moves their
pods through their lifecycle (Pending -> Running and Ready; a Job's pods to Succeeded; deleted pods away).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from engine.kube import Kube
from engine.pki import Pki

#: The annotation kwok's `--manage-nodes-with-annotation-selector` picks its nodes by.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
#: How kwok moves nodes and pods through their lives (our own Stage objects).
KWOK_STAGES = Path(__file__).resolve().parent / "data" / "kwok-stages.yaml"
#: Who the box's bearer token authenticates as: an admin principal's access entry (`cluster.adminPrincipals`).
TOKEN_USER = "eks-admin-principal"
#: Fixed ports are safe: the namespace is new and holds nothing else.
ETCD_CLIENT, ETCD_PEER, API_PORT, MOTO_PORT = 2379, 2380, 6443, 5000
#: The dev stack's service range (Pulumi.dev.yaml cluster.serviceCidr), so ClusterIPs look like the real cluster's.
SERVICE_CIDR = "172.20.0.0/16"
#: Every controller but those that need a cloud or node routes.
ALL_CONTROLLERS = "*,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller"


class BoxError(RuntimeError):
    """The box could not start (a process exited, a check failed): the message says which and where its log is."""


def _ip() -> str:
    """iproute2's `ip`, which makes and enters network namespaces (Debian's iproute2 package)."""
    path = shutil.which("ip")
    if path is None:
        raise BoxError("the engine tier needs `ip` from iproute2 (apt-get install iproute2)")
    return path


def netns_exec(namespace: str) -> list[str]:
    """The prefix that runs a command inside `namespace`."""
    return [_ip(), "netns", "exec", namespace]


def _only_loopback(namespace: str) -> list[str]:
    """The namespace's interfaces that are up, other than loopback (must be none)."""
    out = subprocess.run(
        [*netns_exec(namespace), _ip(), "-o", "link", "show"], check=True, capture_output=True, text=True
    ).stdout
    return [line.split(":")[1].strip() for line in out.splitlines() if line.split(":")[1].strip() != "lo"]


def _component_flags(kubeconfig: Path) -> list[str]:
    """What the controller manager and the scheduler share: their identity (one kubeconfig for the API, its
    authentication and authorization delegation), loopback only, and no leader election (there is one of each)."""
    return [
        *(f"--{flag}={kubeconfig}" for flag in ("kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig")),
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
    ]


def _command_line(pid: int) -> str | None:
    """`<pid> <command line>` of a running process, or None once it is gone."""
    try:
        return f"{pid} " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class Box:
    """The control plane's binaries in `bin_dir`, its data and logs in `folder`."""

    bin_dir: Path
    folder: Path
    namespace: str = field(default_factory=lambda: f"eksml-{uuid.uuid4().hex[:8]}")
    processes: list[_Process] = field(default_factory=list)
    kubeconfig: Path | None = None
    pki: Pki | None = None
    #: The bearer token of the cluster's admin principal (engine/aws_cli.py hands it out as `aws eks get-token`).
    token: str | None = None
    _serving: Any = None

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> Kube:
        """Make the namespace, start the control plane and kwok, and return a client for the API server."""
        kube = self.start_api()
        self.start_controller_manager()
        kubeconfigs = {user: self.folder / f"{user}.kubeconfig" for user in ("scheduler", "kwok")}
        self._spawn(
            "kube-scheduler",
            _component_flags(kubeconfigs["scheduler"]),
        )  # fmt: skip
        self._spawn(
            "kwok",
            [
                "--kubeconfig", str(kubeconfigs["kwok"]),
                "--config", str(KWOK_STAGES),
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                # Pod addresses are never dialled from outside the namespace; any range does.
                "--cidr", "10.244.0.1/16",
                "--node-ip", "127.0.0.1",
                "--server-address", "127.0.0.1:10247",
                "--node-lease-duration-seconds", "40",
            ],
        )  # fmt: skip
        return kube

    def start_api(self) -> Kube:
        """Make the namespace and start etcd and the API server only (admission and RBAC need no more); return a
        client for it. The other parts' kubeconfigs are written, for `start_controller_manager` and `start`."""
        self.folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([_ip(), "netns", "add", self.namespace], check=True)
        subprocess.run([*netns_exec(self.namespace), _ip(), "link", "set", "lo", "up"], check=True)
        if others := _only_loopback(self.namespace):
            raise BoxError(f"network namespace {self.namespace} has interfaces besides lo: {others}")
        pki = self.pki = Pki(self.folder / "pki")
        api = pki.issue(
            "apiserver",
            "kube-apiserver",
            server_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
            server_ips=("127.0.0.1", SERVICE_CIDR.split("/")[0].rsplit(".", 2)[0] + ".0.1"),
        )
        for user, cn, org in (
            ("admin", "eksml-admin", "system:masters"),
            ("controller-manager", "system:kube-controller-manager", None),
            ("scheduler", "system:kube-scheduler", None),
            ("kwok", "eksml-kwok", "system:masters"),
        ):
            self._kubeconfig(pki, user, cn, org)
        self.kubeconfig = self.folder / "admin.kubeconfig"
        self.token = secrets.token_urlsafe(32)
        tokens = self.folder / "tokens.csv"
        # The identity `aws eks get-token` gives a principal with an access entry and the cluster admin policy, for
        # stacks that reach the cluster through a kubeconfig made from the platform's outputs (engine/aws_cli.py).
        tokens.write_text(f'{self.token},{TOKEN_USER},{TOKEN_USER},"system:masters"\n')
        tokens.chmod(0o600)
        self._start_etcd()
        self._serving = api
        return self._start_apiserver()

    def start_controller_manager(self, controllers: str = ALL_CONTROLLERS) -> None:
        """The controller manager, running `controllers` (its `--controllers` syntax)."""
        assert self.pki is not None
        pki = self.pki
        self._spawn(
            "kube-controller-manager",
            [
                *_component_flags(self.folder / "controller-manager.kubeconfig"),
                "--use-service-account-credentials=true",
                "--service-account-private-key-file", str(pki.service_account_key),
                "--root-ca-file", str(pki.ca_cert),
                "--cluster-signing-cert-file", str(pki.ca_cert),
                "--cluster-signing-key-file", str(pki.ca_key),
                "--service-cluster-ip-range", SERVICE_CIDR,
                # No cloud, no node IPAM: kwok gives pods their (fake) addresses.
                "--allocate-node-cidrs=false",
                f"--controllers={controllers}",
            ],
        )  # fmt: skip

    def start_moto(self) -> str:
        """moto's AWS server inside the namespace, for what calls AWS with boto3 (the sweeps); its endpoint URL."""
        server = Path(sys.executable).parent / "moto_server"
        self._spawn("moto", ["-H", "127.0.0.1", "-p", str(MOTO_PORT)], executable=server)
        url = f"http://127.0.0.1:{MOTO_PORT}"
        self._wait("moto", lambda: "Running on" in (self.folder / "logs" / "moto.log").read_text(errors="replace"), 60)
        return url

    def start_standins(self) -> None:
        """The stand-ins for the controllers whose work the stack waits for (engine.standins)."""
        assert self.pki is not None
        admin = self.pki.folder
        self._spawn(
            "standins",
            [
                "-m", "engine.standins", f"https://127.0.0.1:{API_PORT}",
                str(self.pki.ca_cert), str(admin / "admin.crt"), str(admin / "admin.key"),
            ],
            executable=Path(sys.executable),
        )  # fmt: skip

    def stop(self) -> None:
        """Stop every process (the API server last but etcd) and whatever else runs in the namespace (a Pulumi CLI's
        plugins outlive a killed CLI), then remove the namespace."""
        self.stop_strays()
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                os.killpg(process.popen.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process in reversed(self.processes):
            try:
                process.popen.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                os.killpg(process.popen.pid, signal.SIGKILL)
                process.popen.wait()
        self.processes.clear()
        subprocess.run([_ip(), "netns", "delete", self.namespace], check=False)

    def strays(self) -> list[str]:
        """`<pid> <command line>` of each process in the namespace the box did not start: a Pulumi CLI, or its
        plugins after it was killed."""
        return [line for pid in self._stray_pids() if (line := _command_line(pid)) is not None]

    def stop_strays(self) -> None:
        """SIGKILL every stray, so that nothing of an interrupted run changes anything behind our back: the runbook's
        first step after a killed CLI, and `stop`'s."""
        for pid in self._stray_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _stray_pids(self) -> list[int]:
        listed = subprocess.run([_ip(), "netns", "pids", self.namespace], capture_output=True, text=True, check=False)
        return sorted({int(p) for p in listed.stdout.split()} - {p.popen.pid for p in self.processes})

    def __enter__(self) -> Box:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- running things inside -------------------------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """Run a command inside the namespace and wait for it (its output captured)."""
        return subprocess.run(
            [*netns_exec(self.namespace), *argv],
            env={**os.environ, **(env or {})},
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def logs(self, name: str) -> str:
        """The last lines of a component's log, for an error message."""
        path = self.folder / "logs" / f"{name}.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(lines[-40:])

    def check(self) -> None:
        """Raise if a control-plane process has exited."""
        for process in self.processes:
            if process.popen.poll() is not None:
                raise BoxError(
                    f"{process.name} exited with {process.popen.returncode}; log {process.log}:\n"
                    f"{self.logs(process.name)}"
                )

    # -- the parts -------------------------------------------------------------------------------------------------

    def _kubeconfig(self, pki: Pki, user: str, common_name: str, organization: str | None) -> Path:
        credential = pki.issue(user, common_name, organization=organization)
        config: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "engine",
                    "cluster": {"server": f"https://127.0.0.1:{API_PORT}", "certificate-authority-data": pki.ca_data},
                }
            ],
            "users": [{"name": user, "user": credential.kubeconfig_user()}],
            "contexts": [{"name": "engine", "context": {"cluster": "engine", "user": user}}],
            "current-context": "engine",
        }
        path = self.folder / f"{user}.kubeconfig"
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)
        return path

    def _start_etcd(self) -> None:
        data = self.folder / "etcd"
        shutil.rmtree(data, ignore_errors=True)
        self._spawn(
            "etcd",
            [
                "--name", "box",
                "--data-dir", str(data),
                "--listen-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
                "--advertise-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
                "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
                "--initial-cluster", f"box=http://127.0.0.1:{ETCD_PEER}",
                # A test cluster: losing it on a crash costs nothing, and fsync costs seconds per hundred writes.
                "--unsafe-no-fsync",
                "--quota-backend-bytes", str(4 * 1024**3),
            ],
        )  # fmt: skip

    def stop_apiserver(self) -> None:
        """Kill the API server (SIGKILL: a crash, not a drain); etcd keeps every object for `start_apiserver`."""
        process = next(p for p in self.processes if p.name == "kube-apiserver")
        os.killpg(process.popen.pid, signal.SIGKILL)
        process.popen.wait()
        self.processes.remove(process)

    def start_apiserver(self) -> Kube:
        """Start the API server again after `stop_apiserver`, on the same etcd, certificates and port."""
        return self._start_apiserver()

    def _start_apiserver(self) -> Kube:
        assert self.pki is not None
        assert self.kubeconfig is not None
        pki, serving = self.pki, self._serving
        self._spawn(
            "kube-apiserver",
            [
                "--etcd-servers", f"http://127.0.0.1:{ETCD_CLIENT}",
                "--bind-address", "127.0.0.1",
                "--advertise-address", "127.0.0.1",
                "--secure-port", str(API_PORT),
                "--tls-cert-file", str(serving.cert),
                "--tls-private-key-file", str(serving.key),
                "--client-ca-file", str(pki.ca_cert),
                "--token-auth-file", str(self.folder / "tokens.csv"),
                "--service-account-key-file", str(pki.service_account_pub),
                "--service-account-signing-key-file", str(pki.service_account_key),
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range", SERVICE_CIDR,
                # As EKS: RBAC decides, the default admission chain (Pod Security, quotas, ...) applies, and
                # privileged containers are allowed (node agents need them; Pod Security admission decides per
                # namespace). The API server's own default refuses every privileged pod.
                "--authorization-mode", "Node,RBAC",
                "--allow-privileged=true",
                # The Pulumi engine creates hundreds of objects at once; the defaults (400/200 in flight) answer
                # 429 and slow the run. EKS scales its control plane instead.
                "--max-requests-inflight", "1600",
                "--max-mutating-requests-inflight", "800",
                # Webhook and aggregated-API calls would go to pod and service addresses; nothing listens there.
                "--enable-aggregator-routing=false",
            ],
        )  # fmt: skip
        kube = Kube.from_kubeconfig(self.kubeconfig, runner=netns_exec(self.namespace))
        self._wait("kube-apiserver", lambda: kube.ready(), timeout=120)
        return kube

    def _spawn(self, name: str, args: list[str], *, executable: Path | None = None) -> None:
        """Start `name` (a binary of bin_dir unless `executable` is given) inside the namespace, logging to a file."""
        logs = self.folder / "logs"
        logs.mkdir(exist_ok=True)
        log = logs / f"{name}.log"
        handle: IO[bytes] = log.open("ab")
        popen = subprocess.Popen(
            [*netns_exec(self.namespace), str(executable or self.bin_dir / name), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # The stand-ins and moto are Python modules of this repository and its virtualenv.
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
        self.processes.append(_Process(name, popen, log))
        time.sleep(0.2)
        self.check()
        if name == "etcd":
            self._wait("etcd", lambda: "ready to serve client requests" in log.read_text(errors="replace"), 60)

    def _wait(self, what: str, ready: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            if ready():
                return
            time.sleep(0.5)
        raise BoxError(f"{what} not ready after {timeout:.0f} s; log:\n{self.logs(what)}")
