"""Preflight when an endpoint answers something that is not AWS's format (a proxy's or a captive portal's page): the
check that made the call gets an ERROR row naming the call and the endpoint, the run goes on, and the command exits 3
(AWS could not be read) instead of printing a traceback. botocore raises such answers as ResponseParserError, which is
neither a ClientError nor a BotoCoreError."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from components.tools.preflight import __main__ as cli
from components.tools.preflight.results import Status
from components.tools.preflight.runner import capacity_checks
from tests import preflight_world
from tests.preflight_world import REPO, platform_config

credentials = preflight_world.credentials
clients = preflight_world.clients


class _Body:
    """A response body as urllib3 hands it to botocore."""

    def __init__(self, content: bytes):
        self.content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.content

    def read(self, *_: Any, **__: Any) -> bytes:
        return self.content


def _proxy_page(client: Any, operation: str, status: int = 403, page: bytes = b"Blocked by proxy") -> None:
    """Every `operation` call of `client` is answered by a proxy's page, before moto can answer it."""
    service = client.meta.service_model.service_id.hyphenize()

    def answer(request: Any, **_: Any) -> AWSResponse:
        return AWSResponse(request.url, status, HTTPHeaders.from_dict({"Content-Type": "text/html"}), _Body(page))

    client.meta.events.register_first(f"before-send.{service}.{operation}", answer)


def test_an_answer_that_is_not_xml_is_an_error_row_naming_the_check_call_and_endpoint(clients):
    # the offerings too, so the capacity checks stop before the quotas (which moto does not serve)
    _proxy_page(clients.ec2, "DescribeAvailabilityZones")
    _proxy_page(clients.ec2, "DescribeInstanceTypeOfferings")
    results = {r.name: r for r in capacity_checks(platform_config("dev"), clients)}
    assert {name: r.status for name, r in results.items()} == {
        "availability-zones": Status.ERROR,
        "system-node-group": Status.ERROR,  # the run went on to the next check
    }
    zones = results["availability-zones"]
    assert zones.evidence.startswith(
        "could not check: DescribeAvailabilityZones at https://ec2.us-west-2.amazonaws.com answered something that "
        "is not an AWS response (Unable to parse response"
    )
    assert "Blocked by proxy" in zones.evidence
    assert "AWS_ENDPOINT_URL" in zones.fix


def test_the_identity_endpoint_answering_a_page_exits_3_with_an_error_row_not_a_traceback(clients, monkeypatch, capsys):
    from components.tools.preflight import runner

    _proxy_page(clients.sts, "GetCallerIdentity")
    monkeypatch.setattr(cli.Clients, "from_session", classmethod(lambda cls, session: clients))
    # dev's placeholders and unset secrets are FAIL rows of their own (exit 1): judge a stack without them
    monkeypatch.setattr(runner, "placeholder_checks", lambda config: [])
    monkeypatch.setattr(cli, "unset_secret_checks", lambda raw: [])
    assert cli.main(["--stack", "dev", "--project-dir", str(REPO), "--json"]) == 3
    (identity,) = json.loads(capsys.readouterr().out)["checks"]
    assert (identity["name"], identity["status"]) == ("identity", "ERROR")
    assert identity["evidence"].startswith(
        "could not check: GetCallerIdentity at https://sts.us-west-2.amazonaws.com answered something that is not "
        "an AWS response"
    )


def test_an_identity_answer_that_is_xml_but_not_the_calls_is_an_error_row(clients):
    from components.tools.preflight.runner import run_preflight

    # a 200 HTML page parses as XML, in which botocore's reader finds no GetCallerIdentityResult
    _proxy_page(clients.sts, "GetCallerIdentity", status=200, page=b"<html><body>Sign in to the Wi-Fi</body></html>")
    results = {r.name: r for r in run_preflight(platform_config("dev"), clients)}
    assert results["identity"].status is Status.ERROR
    assert results["identity"].evidence == (
        "sts:GetCallerIdentity answered something unexpected (KeyError: 'GetCallerIdentityResult')"
    )
