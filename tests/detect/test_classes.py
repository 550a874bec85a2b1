from __future__ import annotations

from pipelines.detect import classes
from pipelines.kafka.uuid import METADATA_TOPIC_ID, Uuid


def test_every_class_is_either_plannable_or_never_planned() -> None:
    assert classes.GARBAGE_CLASSES.isdisjoint(classes.NEVER_PLAN)
    assert set(classes.ALL_CLASSES) == classes.GARBAGE_CLASSES | classes.NEVER_PLAN
    assert len(set(classes.ALL_CLASSES)) == len(classes.ALL_CLASSES)


def test_live_and_in_progress_classes_are_never_planned() -> None:
    for cls in (classes.OK, classes.PENDING_DELETE, classes.FUTURE_IN_PROGRESS, classes.UNKNOWN,
                classes.METADATA_LOG, classes.UNPARSEABLE_DIR):
        assert not classes.is_plannable(cls, protected=False)
    assert classes.is_plannable(classes.DELETED_TOPIC, protected=False)
    assert not classes.is_plannable(classes.DELETED_TOPIC, protected=True)


def test_protection() -> None:
    some_id = Uuid(12345, 678)
    assert classes.is_protected("__consumer_offsets", some_id)
    assert classes.is_protected("__transaction_state", None)
    assert classes.is_protected(None, METADATA_TOPIC_ID)
    assert classes.is_protected("__cluster_metadata", None)
    assert classes.is_protected("payments-eu", some_id, ["payments-.*"])
    assert not classes.is_protected("xpayments-eu", some_id, ["payments-.*"])
    assert not classes.is_protected("orders", some_id)
    assert not classes.is_protected(None, None)
