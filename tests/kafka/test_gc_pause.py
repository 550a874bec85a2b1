"""``gc_paused`` turns the cyclic GC off for a block and leaves it as it found it, also on errors and nested."""

from __future__ import annotations

import gc

import pytest

from pipelines.kafka.gc_pause import gc_paused


def test_nested_pauses_restore_only_at_the_outermost_and_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the inner block found GC off and leaves it off"
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_caller_that_disabled_gc_keeps_it_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
