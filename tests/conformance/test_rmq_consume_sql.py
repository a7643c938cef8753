"""`rmq consume --sql` against Apache's cluster and against rmq's: the same messages in,
the same messages out.

Twenty messages with property ``a`` = 0..19 go into a topic of each cluster through
`rmq produce`; `rmq consume --sql` then reads them queue by queue (`-e`) and as a push
consumer of a group (`-g ... -c N`).  Both clusters run with ``enablePropertyFilter=true``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.clusters import Cluster
from tests.conformance.test_rmq_tools import rmq_cli

SECTION = "rmq tools against both clusters"
TOPIC = "ConfToolsSql"


def _indexes(output: str) -> list[int]:
    return sorted(int(json.loads(line)["properties"]["a"]) for line in output.splitlines())


def _run(cluster: Cluster) -> dict[str, Any]:
    stdin = "".join(
        json.dumps({"body": f"m{a}", "properties": {"a": str(a)}}) + "\n" for a in range(20)
    )
    rmq_cli(cluster, "produce", TOPIC, stdin=stdin)
    read = rmq_cli(cluster, "consume", TOPIC, "--sql", "a > 14", "-e")
    pushed = rmq_cli(
        cluster, "consume", TOPIC, "-g", "CG-conf-sql", "--sql", "a BETWEEN 2 AND 4", "-c", "3"
    )
    return {"read": _indexes(read), "pushed": _indexes(pushed)}


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=pytest.mark.matrix(SECTION, "rmq consume --sql", column))
        for kind, column in (("apache", "Apache"), ("rmq", "rmq"))
    ],
)
def test_consume_sql(kind: str, request: pytest.FixtureRequest, differential: Any) -> None:
    def checked(cluster: Cluster) -> Any:
        result = _run(cluster)
        assert result == {"read": [15, 16, 17, 18, 19], "pushed": [2, 3, 4]}, result
        return result

    expected = differential.apache_result("tools:rmq consume --sql", checked)
    if kind == "apache":
        return
    assert checked(request.getfixturevalue("rmq")) == expected
