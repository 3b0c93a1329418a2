"""Spark fixtures for the fuzz tests (tests/_spark.py)."""

from tests._spark import spark_local, spark_standalone  # noqa: F401
