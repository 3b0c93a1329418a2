"""Suite-wide pytest configuration. Fixtures for servers and Spark live in their own
modules (tests/_servers.py, tests/_spark.py …); markers are declared in pyproject.toml."""
