"""Version names by ordinal (rmq.remoting.codes.version_desc), as Java's MQVersion names them:
the broker's remarks and the admin tools print them."""

from __future__ import annotations

import pytest

from rmq.remoting.codes import MQVersion, version_desc

# ordinals of MQVersion.Version in Apache's 4.9.8 source
ORDINALS = {
    0: "V3_0_0_SNAPSHOT",
    15: "V3_0_0_FINAL",
    16: "V3_0_1_SNAPSHOT",
    28: "V3_0_7_SNAPSHOT",
    35: "V3_0_10",
    61: "V3_1_7",
    62: "V3_1_8_SNAPSHOT",
    85: "V3_2_9",
    86: "V3_3_1_SNAPSHOT",
    211: "V3_9_9",
    212: "V4_0_0_SNAPSHOT",
    409: "V4_9_8",
    611: "V5_9_9",
    612: "HIGHER_VERSION",
    5000: "HIGHER_VERSION",
}


@pytest.mark.parametrize(("ordinal", "name"), ORDINALS.items())
def test_version_names_follow_the_java_enum(ordinal: int, name: str) -> None:
    assert version_desc(ordinal) == name


def test_the_named_versions_are_named_so() -> None:
    for version in MQVersion:
        assert version_desc(version) == version.name


def test_a_negative_version_is_its_number() -> None:
    assert version_desc(-1) == "-1"
