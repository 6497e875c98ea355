"""Apache Flink's own operators as an engine eowc verifies (``flink-native``, ``eowc engine
flink``): :mod:`.harness` says how an arrival log is fed to Flink epoch by epoch, :mod:`.engine`
runs it through PyFlink (extra: an environment with ``apache-flink``), :mod:`.sink` is the sink
that runs in Flink's Python worker."""
