"""rmq.common.lazydata: dataclasses made on first use, the same as made at once."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from rmq.common.lazydata import lazy_dataclass

completed: list[str] = []


def _note(cls: type) -> None:
    completed.append(cls.__name__)


@lazy_dataclass(kw_only=True, on_complete=_note)
class Point:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


@lazy_dataclass(frozen=True, on_complete=_note)
class Key:
    name: str


@lazy_dataclass(on_complete=_note)
class Untouched:
    value: int


def test_a_class_is_made_by_its_first_instance_and_only_once() -> None:
    assert "Point" not in completed
    assert "__dataclass_fields__" not in vars(Point)
    first = Point(x=1)
    assert completed.count("Point") == 1
    second = Point(x=1, tags=["a"])
    assert completed.count("Point") == 1
    assert first == Point(x=1, y=0) and first != second
    assert repr(second) == "Point(x=1, y=0, tags=['a'])"
    assert first.tags is not Point(x=2).tags
    with pytest.raises(TypeError, match="positional"):
        Point(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing"):
        Point()  # type: ignore[call-arg]


def test_asking_for_the_fields_makes_the_class() -> None:
    declared: object = Key
    assert dataclasses.is_dataclass(declared)
    assert [field.name for field in dataclasses.fields(Key)] == ["name"]
    assert completed.count("Key") == 1
    key = Key("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.name = "b"  # type: ignore[misc]
    assert {key: 1}[Key("a")] == 1
    assert dataclasses.replace(key, name="b") == Key("b")


def test_two_threads_make_a_class_once() -> None:
    @lazy_dataclass(on_complete=_note)
    class Raced:
        value: int

    barrier = threading.Barrier(8)
    made: list[Raced] = []

    def create(n: int) -> None:
        barrier.wait()
        made.append(Raced(n))

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(item.value for item in made) == list(range(8))
    assert completed.count("Raced") == 1


def test_an_unused_class_is_never_made_and_a_slotted_one_is_refused() -> None:
    assert "Untouched" not in completed
    assert "__dataclass_fields__" not in vars(Untouched)
    with pytest.raises(ValueError, match="slotted"):
        lazy_dataclass(slots=True)
    with pytest.raises(AttributeError):
        Untouched.no_such_attribute  # type: ignore[attr-defined]  # noqa: B018
