"""kafka-logdir-gc: find, measure and safely reclaim Kafka partition directories the cluster no longer owns."""

__all__ = ["__version__"]
__version__ = "0.1.0"
