"""pytest plugin of pgwire_spec (entry point pytest11): fixtures for users' test suites."""
