"""ConsumerOffsetManager: committed offsets, consumerOffset.json, and the new-group rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmq.server.broker.offset.consumeroffset import (
    ConsumerOffsetManager,
    offset_for_new_group,
    topic_group_key,
)
from rmq.store.configfile import ConfigFileError
from tests.unit.broker.helpers import running_broker


def make_manager(tmp_path: Path) -> ConsumerOffsetManager:
    return ConsumerOffsetManager(tmp_path / "config" / "consumerOffset.json")


def test_commit_and_query(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    assert offsets.query("g1", "T", 0) == -1
    assert offsets.query_offsets("g1", "T") is None

    offsets.commit("10.0.0.5:4000", "g1", "T", 0, 12)
    offsets.commit("10.0.0.5:4000", "g1", "T", 1, 7)
    offsets.commit("10.0.0.5:4000", "g1", "T", 0, 15)
    assert offsets.query("g1", "T", 0) == 15
    assert offsets.query("g1", "T", 1) == 7
    assert offsets.query("g1", "T", 2) == -1
    assert offsets.query("g2", "T", 0) == -1

    offsets.commit("10.0.0.5:4000", "g1", "T", 0, 3)
    assert offsets.query("g1", "T", 0) == 3, "a consumer may move back"

    copy = offsets.query_offsets("g1", "T")
    assert copy == {0: 3, 1: 7}
    assert copy is not None
    copy[0] = 99
    assert offsets.query("g1", "T", 0) == 3


def test_commits_reach_the_file_only_on_persist(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.commit("c", "g1", "TopicTest", 0, 12)
    offsets.commit("c", "g1", "TopicTest", 1, 7)
    offsets.commit("c", "g1", "%RETRY%g1", 0, 0)
    assert not offsets.path.exists()

    offsets.persist()
    assert offsets.path.read_text(encoding="utf-8") == (
        "{\n"
        '\t"offsetTable":{\n'
        '\t\t"TopicTest@g1":{0:12,1:7\n'
        "\t\t},\n"
        '\t\t"%RETRY%g1@g1":{0:0\n'
        "\t\t}\n"
        "\t}\n"
        "}"
    )


APACHE_CONSUMER_OFFSET_JSON = """{
\t"offsetTable":{
\t\t"%RETRY%please_rename_unique_group_name_4@please_rename_unique_group_name_4":{0:0
\t\t},
\t\t"TopicTest@please_rename_unique_group_name_4":{0:250,1:250,2:249,3:251
\t\t},
\t\t"TopicTest@tools":{"0":17
\t\t}
\t}
}"""


def test_load_an_apache_consumer_offset_json(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.path.parent.mkdir(parents=True)
    offsets.path.write_text(APACHE_CONSUMER_OFFSET_JSON, encoding="utf-8")
    offsets.load()

    group = "please_rename_unique_group_name_4"
    assert offsets.query_offsets(group, "TopicTest") == {0: 250, 1: 250, 2: 249, 3: 251}
    assert offsets.query(group, "%RETRY%" + group, 0) == 0
    assert offsets.query("tools", "TopicTest", 0) == 17, "a quoted queue id reads as an int"
    assert offsets.groups_of_topic("TopicTest") == {group, "tools"}
    assert offsets.topics_of_group(group) == {"TopicTest", "%RETRY%" + group}


def test_load_falls_back_to_the_backup(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.path.parent.mkdir(parents=True)
    offsets.path.write_text('{"offsetTable":{"T@g":{0:', encoding="utf-8")
    offsets.path.with_name("consumerOffset.json.bak").write_text(
        APACHE_CONSUMER_OFFSET_JSON, encoding="utf-8"
    )
    offsets.load()
    assert offsets.query("tools", "TopicTest", 0) == 17

    offsets.path.with_name("consumerOffset.json.bak").write_text("}", encoding="utf-8")
    with pytest.raises(ConfigFileError):
        make_manager(tmp_path).load()


def test_persist_round_trip_keeps_the_previous_file_as_backup(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.commit("c", "g1", "T", 0, 1)
    offsets.persist()
    first = offsets.path.read_text(encoding="utf-8")
    offsets.commit("c", "g1", "T", 0, 2)
    offsets.commit("c", "g2", "U", 3, 40)
    offsets.persist()
    assert offsets.path.with_name("consumerOffset.json.bak").read_text(encoding="utf-8") == first

    restarted = make_manager(tmp_path)
    restarted.load()
    assert restarted.offset_wrapper() == offsets.offset_wrapper()
    assert restarted.query("g2", "U", 3) == 40


def test_group_and_topic_lookups_clone_and_remove(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.commit("c", "g1", "A", 0, 5)
    offsets.commit("c", "g1", "B", 0, 6)
    offsets.commit("c", "g2", "A", 1, 7)
    offsets.commit("c", "g10", "A", 0, 8)
    assert offsets.topics_of_group("g1") == {"A", "B"}
    assert offsets.groups_of_topic("A") == {"g1", "g2", "g10"}
    assert offsets.topics_of_group("nobody") == set()

    offsets.clone_offset("g1", "g3", "A")
    assert offsets.query_offsets("g3", "A") == {0: 5}
    offsets.commit("c", "g1", "A", 0, 50)
    assert offsets.query("g3", "A", 0) == 5, "a clone is a copy"
    offsets.clone_offset("nobody", "g4", "A")
    assert offsets.query_offsets("g4", "A") is None

    offsets.remove_group("g1")
    assert offsets.topics_of_group("g1") == set()
    assert offsets.query("g10", "A", 0) == 8, "only that exact group goes"
    assert offsets.groups_of_topic("A") == {"g2", "g3", "g10"}
    assert topic_group_key("A", "g2") in offsets.offset_wrapper().offset_table


def test_lowest_offset_still_needed(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.commit("c", "g1", "T", 0, 10)
    offsets.commit("c", "g1", "T", 1, 30)
    offsets.commit("c", "g2", "T", 0, 4)
    offsets.commit("c", "g2", "T", 1, 40)
    offsets.commit("c", "g3", "T", 0, 1)
    offsets.commit("c", "g1", "Other", 0, 0)
    min_offsets = {0: 3, 1: 0}

    def min_offset_in_queue(topic: str, queue_id: int) -> int:
        assert topic == "T"
        return min_offsets[queue_id]

    # g3's offset 1 is below the store's minimum 3: it no longer holds anything back.
    assert offsets.query_min_offset_in_all_groups("T", (), min_offset_in_queue) == {0: 4, 1: 30}
    assert offsets.query_min_offset_in_all_groups("T", {"g2"}, min_offset_in_queue) == {
        0: 10,
        1: 30,
    }
    assert offsets.query("g2", "T", 0) == 4, "filtered groups keep their offsets"
    assert offsets.query_min_offset_in_all_groups("None", (), min_offset_in_queue) == {}


def test_offset_for_a_new_group() -> None:
    assert offset_for_new_group(0, lambda: False) == 0
    assert offset_for_new_group(0, lambda: True) is None

    def never_asked() -> bool:
        raise AssertionError("the first message's place matters only when nothing was cleaned")

    assert offset_for_new_group(120, never_asked) is None


def test_offsets_by_topic_is_a_copy_of_every_group_on_every_topic(tmp_path: Path) -> None:
    offsets = make_manager(tmp_path)
    offsets.commit("c", "g1", "T", 0, 12)
    offsets.commit("c", "g2", "T", 1, 7)
    offsets.commit("c", "g1", "U", 3, 1)
    by_topic = offsets.offsets_by_topic()
    assert by_topic == {"T": {"g1": {0: 12}, "g2": {1: 7}}, "U": {"g1": {3: 1}}}
    by_topic["T"]["g1"][0] = 99
    assert offsets.query("g1", "T", 0) == 12


def test_the_broker_store_sees_the_groups_offsets(tmp_path: Path) -> None:
    with running_broker(tmp_path) as context:
        context.consumer_offset_manager.commit("c", "g1", "T", 0, 5)
        assert context.store.group_offsets is not None
        assert context.store.group_offsets() == {"T": {"g1": {0: 5}}}
