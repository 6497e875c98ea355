"""Tests that run Apache Spark (marked ``spark``): the Spark plumbing of the executors."""
