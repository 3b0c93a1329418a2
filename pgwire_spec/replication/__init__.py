"""Streaming replication: the CopyData payloads of a START_REPLICATION conversation."""
