"""The compiled fast constructor (``_native_fastinit.c``) against ``python_fast_constructor`` and the dataclass."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines import native
from pipelines.kafka.fast_init import NATIVE, fast_constructor, python_fast_constructor
from pipelines.kafka.metadata_codec import MetadataRecord
from pipelines.kafka.metadata_log import LogEntry
from pipelines.metadata.image import PartitionImage

compiled = native.load(NATIVE)
pytestmark = pytest.mark.skipif(compiled is None, reason="the compiled fast constructor is not built")

CLASSES = [PartitionImage, LogEntry, MetadataRecord]
anything = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.tuples(st.integers()), st.booleans())


def _maker(cls: type):
    return compiled.maker(cls, tuple(getattr(cls, f.name) for f in dataclasses.fields(cls)))


@given(cls=st.sampled_from(CLASSES), data=st.data())
def test_same_object_as_the_python_twin_and_the_dataclass(cls: type, data: st.DataObject) -> None:
    args = [data.draw(anything) for _ in dataclasses.fields(cls)]
    made = _maker(cls)(*args)
    assert type(made) is cls
    assert made == python_fast_constructor(cls)(*args) == cls(*args)
    for f, value in zip(dataclasses.fields(cls), args, strict=True):
        assert getattr(made, f.name) is value
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(dataclasses.fields(cls)[0].name, 1)


def test_fast_constructor_uses_the_compiled_maker_unless_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    assert type(fast_constructor(PartitionImage)).__name__ == "Maker"
    monkeypatch.setenv(native.PURE_PYTHON_ENV, "1")
    assert fast_constructor(PartitionImage).__name__ == "new_PartitionImage"


@pytest.mark.parametrize("cls", CLASSES)
def test_wrong_argument_counts_raise_type_error_like_the_twin(cls: type) -> None:
    n = len(dataclasses.fields(cls))
    for make in (_maker(cls), python_fast_constructor(cls)):
        with pytest.raises(TypeError):
            make(*range(n - 1))
        with pytest.raises(TypeError):
            make(*range(n + 1))
    with pytest.raises(TypeError):
        _maker(cls)(*range(n - 1), last=1)


def test_only_writable_object_slots_of_the_class_are_accepted() -> None:
    @dataclass(frozen=True, slots=True)
    class Other:
        a: int

    with pytest.raises(TypeError):
        compiled.maker(PartitionImage, (PartitionImage.leader, Other.a))  # a slot of another class
    with pytest.raises(TypeError):
        compiled.maker(PartitionImage, (PartitionImage.directory_of,))  # not a slot
    assert type(complex.real) is type(Other.a)  # a member descriptor, but of a C double, read-only
    with pytest.raises(TypeError):
        compiled.maker(complex, (complex.real,))


def test_references_are_counted() -> None:
    value = object()
    before = sys.getrefcount(value)
    made = _maker(MetadataRecord)(1, 2, "n", value, ())
    assert sys.getrefcount(value) == before + 1
    del made
    assert sys.getrefcount(value) == before
