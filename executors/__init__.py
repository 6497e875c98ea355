"""Spark-based EOWC executors (SortBuffer, Sort, GroupAgg, SortAgg, ...): see the executor issues."""
