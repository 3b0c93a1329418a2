"""pgoutput: the logical replication message formats."""
