"""One shared local Spark session for the EOWC executors and their tests.

:func:`spark_session` starts Spark once per process (Spark allows one ``SparkContext`` per JVM) and
returns the same session afterwards. The session is configured for what the executors need
(SEMANTICS.md §4): the RocksDB state store provider, which ``transformWithStateInPandas``
requires; Python workers running this very interpreter, so they find pandas, pyarrow, protobuf
and this project; the UTC session time zone, so ``TIMESTAMP`` values are microseconds since the
Unix epoch in UTC on both sides; two shuffle partitions, so that stateful operators on a
2-core machine start few tasks; no web UI, no progress bar and only ``ERROR`` logs; and,
unless ``SPARK_HOME`` is set, a Spark home without PySpark's zipped sources (:func:`spark_home`),
so that the Python processes Spark starts import PySpark compiled.

:func:`check_java` runs before the JVM is started and raises :class:`SparkSetupError` with a
message that says what to do when Java is missing or older than 17.

Start-up time (2 cores, PySpark 4.3, measured): a default JVM takes about 17 s to a ready session;
``-XX:TieredStopAtLevel=1`` (the default of ``$EOWC_SPARK_JAVA_OPTIONS``) makes that about 9 s, and
a class-data-sharing archive of Spark's classes (:mod:`eowc.executors.spark.class_archive`, about
a minute, once per machine; used automatically when present, ``EOWC_SPARK_CDS=0`` turns it off)
about 4.5 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PySpark is imported only when a session is actually started
    from pyspark.sql import SparkSession

#: The oldest Java that Spark 4.x runs on.
MIN_JAVA_MAJOR = 17

#: The state store provider that ``transformWithStateInPandas`` requires.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

#: Log4j 2 configuration for the driver JVM: only errors, on standard error. Spark's own default
#: profile logs INFO and prints "Using Spark's default log4j profile" at start-up; the logger of
#: ``PythonGatewayServer`` (the class that starts the JVM side of PySpark) must be configured
#: too, or Spark's shell logic prints "Setting default log level to WARN" and shows warnings.
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""

#: The environment variable that makes the driver JVM record the classes it loaded into this
#: file when it exits (:mod:`eowc.executors.spark.class_archive`).
CDS_DUMP_ENV_VAR = "EOWC_SPARK_CDS_DUMP"

_VERSION_RE = re.compile(r'version "([^"]+)"')


class SparkSetupError(Exception):
    """Spark cannot be started on this machine; the message says why and what to do."""


def require_pyspark() -> None:
    """An ImportError naming PySpark unless it is installed (the spark extra): a command
    that will start Spark says so before it does anything else."""
    import pyspark  # noqa: F401


def java_executable(env: Mapping[str, str]) -> str:
    """The ``java`` that Spark's launcher will run: ``$JAVA_HOME/bin/java`` if JAVA_HOME is set,
    else ``java`` on PATH (the rule of Spark's ``bin/spark-class``)."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            raise SparkSetupError(
                f"JAVA_HOME is set to {java_home!r}, but {java!r} is not an executable file; "
                f"point JAVA_HOME at a Java {MIN_JAVA_MAJOR} or newer installation "
                "(e.g. /usr/lib/jvm/java-17-openjdk-amd64) or unset it to use `java` from PATH")
        return java
    java = shutil.which("java", path=env.get("PATH", os.defpath))
    if java is None:
        raise SparkSetupError(
            f"Spark needs Java {MIN_JAVA_MAJOR} or newer, but JAVA_HOME is not set and there is no "
            "`java` on PATH; install a JDK (e.g. `apt-get install openjdk-17-jre-headless`) or set "
            "JAVA_HOME to one")
    return java


def parse_java_major(version_output: str) -> int | None:
    """The major version from ``java -version`` output (``"1.8.0_292"`` is 8, ``"17.0.15"`` is
    17, ``"21-ea"`` is 21), or None if the output names no version."""
    match = _VERSION_RE.search(version_output)
    if match is None:
        return None
    parts = re.split(r"[.\-+_]", match.group(1))
    try:
        major = int(parts[0])
        if major == 1 and len(parts) > 1:  # the old "1.x" scheme, Java 8 and before
            major = int(parts[1])
    except ValueError:
        return None
    return major


def check_java(env: Mapping[str, str] | None = None) -> int:
    """Check that the Java Spark would use exists and is version 17 or newer; return its major
    version. ``env`` defaults to ``os.environ``. Raises :class:`SparkSetupError` otherwise."""
    env = os.environ if env is None else env
    java = java_executable(env)
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60,
                                env=dict(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SparkSetupError(f"cannot run {java!r} -version: {error}") from None
    output = result.stderr + result.stdout
    major = parse_java_major(output)
    if major is None:
        first = output.strip().splitlines()[0] if output.strip() else "(no output)"
        raise SparkSetupError(f"cannot read the Java version from `{java} -version`: {first}")
    if major < MIN_JAVA_MAJOR:
        raise SparkSetupError(
            f"Spark 4 needs Java {MIN_JAVA_MAJOR} or newer, but {java!r} is Java {major}; install a "
            f"newer JDK and put it on PATH or point JAVA_HOME at it")
    return major


def _log4j2_file(env: Mapping[str, str] | None = None) -> str:
    """Write :data:`LOG4J2_PROPERTIES` to a file in the temporary directory; return its path.
    A logged Java exception shows only its first line (``%ex{short}``: the class and message,
    not Spark's stack trace, so a failing run ends with one clear ``eowc: error:`` line),
    unless ``$EOWC_SPARK_STACK_TRACES`` is ``1``."""
    env = os.environ if env is None else env
    full = env.get("EOWC_SPARK_STACK_TRACES", "0") == "1"
    text = LOG4J2_PROPERTIES if full else LOG4J2_PROPERTIES.replace("%m%n%ex\n", "%m%n%ex{short}\n")
    name = f"eowc-spark-log4j2-{os.getuid()}{'-traces' if full else ''}.properties"
    path = os.path.join(tempfile.gettempdir(), name)
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return path
    except OSError:
        pass
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".properties")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
    return path


# ---------------------------------------------------------------------------------------------
# Class-data sharing: a dump of the classes Spark loads, mapped in at JVM start-up


def _java_fingerprint(env: Mapping[str, str]) -> str:
    """What a class archive depends on: the JVM binary and its version, PySpark's version and
    the jars on Spark's class path (names and sizes)."""
    import pyspark

    java = os.path.realpath(java_executable(env))
    version = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60,
                             check=False).stderr
    jars = spark_home(env) / "jars"
    listing = sorted((entry.name, entry.stat().st_size) for entry in jars.glob("*.jar"))
    text = json.dumps([java, version, pyspark.__version__, str(jars), listing])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cache_directory(env: Mapping[str, str]) -> Path:
    """``$EOWC_SPARK_CDS_DIR`` or ``$XDG_CACHE_HOME/eowc`` or ``~/.cache/eowc``."""
    return Path(env.get("EOWC_SPARK_CDS_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "eowc"))


def class_archive_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the class archive for this Java and PySpark is kept (it may not exist), in
    ``$EOWC_SPARK_CDS_DIR`` or ``$XDG_CACHE_HOME/eowc`` or ``~/.cache/eowc``."""
    env = os.environ if env is None else env
    return _cache_directory(env) / f"spark-classes-{_java_fingerprint(env)}.jsa"


# ---------------------------------------------------------------------------------------------
# Spark's home: where the JVMs find Spark's scripts and jars


def pyspark_package() -> Path:
    """The directory of the pip-installed PySpark: ``bin/spark-class``, ``jars``, and
    ``python/lib/pyspark.zip``, PySpark's own modules once more, as source."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_home(env: Mapping[str, str] | None = None) -> Path:
    """The ``SPARK_HOME`` the JVMs are started with: ``$SPARK_HOME`` if it is set; otherwise a
    directory (in the cache directory of :func:`class_archive_path`) of links to everything in
    :func:`pyspark_package` but its ``python`` directory.

    Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the path of every Python process
    it starts (the workers' daemons, and for each streaming query the source's runner and the
    runner that asks a stateful processor for its state variables). Python cannot keep compiled
    modules for a zip, so each of them compiled PySpark's modules from source: about 1 s of CPU
    a process (measured: the source runner's imports 1.3 s from the zip, 0.3 s installed). Without
    the zip they import the same PySpark, installed and compiled, from the interpreter's
    ``site-packages``. If the links cannot be made, the package itself is the home."""
    env = os.environ if env is None else env
    if env.get("SPARK_HOME"):
        return Path(env["SPARK_HOME"])
    package = pyspark_package()
    entries = sorted(entry for entry in package.iterdir() if entry.name != "python")
    digest = hashlib.sha256(json.dumps([str(e) for e in entries]).encode()).hexdigest()[:16]
    home = _cache_directory(env) / f"spark-home-{digest}"
    if not home.is_dir():
        try:
            home.parent.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
        except OSError:
            return package
        try:
            for entry in entries:
                (building / entry.name).symlink_to(entry)
            os.replace(building, home)
        except OSError:  # no links here, or another process made the home first
            shutil.rmtree(building, ignore_errors=True)
    return home if home.is_dir() else package


def archive_usable(java: str, archive: Path) -> bool:
    """Whether a JVM starts with ``archive`` (a truncated archive crashes the JVM at start-up)."""
    try:
        result = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", "-Xlog:disable",
                                 "-version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def _archive_options(env: Mapping[str, str]) -> str:
    """JVM options for class-data sharing: record the classes into ``$EOWC_SPARK_CDS_DUMP`` at
    exit (see :mod:`eowc.executors.spark.class_archive`), else use the archive if there is a
    usable one."""
    dump = env.get(CDS_DUMP_ENV_VAR)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} -Xlog:disable -Xlog:all=error:stderr"
    if env.get("EOWC_SPARK_CDS", "1") == "0":
        return ""
    archive = class_archive_path(env)
    if not archive.is_file():
        return ""
    if not archive_usable(java_executable(env), archive):
        archive.unlink(missing_ok=True)
        return ""
    # An archive made for another class path is ignored by the JVM with a warning on stdout.
    return f"-XX:SharedArchiveFile={archive} -Xlog:disable -Xlog:all=error:stderr"


# ---------------------------------------------------------------------------------------------
# The session


_lock = threading.Lock()
_session: SparkSession | None = None
_session_master: str | None = None


def _is_alive(session: SparkSession) -> bool:
    return getattr(session.sparkContext, "_jsc", None) is not None


#: The JVM's default options (:func:`java_options`).
C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def java_options(env: Mapping[str, str] | None = None, executor: bool = False) -> str:
    """The JVM options: the quiet log configuration, ``$EOWC_SPARK_JAVA_OPTIONS`` (default
    ``-XX:TieredStopAtLevel=1``: the C1 compiler only, which starts Spark about a third faster,
    with a 256 MB code cache: C1 alone reserves 48 MB, which a long ``eowc verify --executor
    spark`` run fills after about 16 minutes, and the JVM then stops compiling; set it to the
    empty string for long benchmarks), and, for the driver, class-data sharing (in ``local``
    mode the driver JVM runs the tasks too)."""
    env = os.environ if env is None else env
    options = [f"-Dlog4j2.configurationFile=file:{_log4j2_file()}",
               env.get("EOWC_SPARK_JAVA_OPTIONS", C1_ONLY),
               "" if executor else _archive_options(env)]
    return " ".join(option for option in options if option)


def extra_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings from ``$EOWC_SPARK_CONF``: whitespace-separated ``key=value`` pairs,
    applied after (so overriding) the session's own, e.g.
    ``EOWC_SPARK_CONF="spark.cores.max=2 spark.sql.shuffle.partitions=4"``. Raises
    :class:`SparkSetupError` for an item without ``=`` or a key not starting with ``spark.``."""
    env = os.environ if env is None else env
    conf: dict[str, str] = {}
    for item in env.get("EOWC_SPARK_CONF", "").split():
        key, equals, value = item.partition("=")
        if not equals or not key.startswith("spark."):
            raise SparkSetupError(f"EOWC_SPARK_CONF: {item!r} is not of the form spark.<key>=<value>")
        conf[key] = value
    return conf


def executor_python_path(env: Mapping[str, str] | None = None) -> str:
    """The ``PYTHONPATH`` for the executors of a cluster: the directory holding this project's
    packages (``semantics``, ``executors``), then ``$PYTHONPATH``. In ``local`` mode the Python
    workers start in the driver's working directory and import what it imports; on a cluster
    they start in the executor's work directory (``<worker dir>/app-<id>/<n>``), so the project
    must be on their path (it is read from the same file system: a cluster on this machine, or
    one with the project at the same path)."""
    env = os.environ if env is None else env
    root = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(part for part in (root, env.get("PYTHONPATH", "")) if part)


def spark_session(master: str = "local[2]", app_name: str = "eowc") -> SparkSession:
    """The shared Spark session of this process, started on first use.

    ``master`` and ``app_name`` take effect when the session is started; asking later for a
    different master raises :class:`SparkSetupError`, since one process has one SparkContext.
    ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` are set to this interpreter unless set
    already. If the session was stopped, a new one is started (in the same JVM).
    """
    global _session, _session_master
    with _lock:
        if _session is not None and _is_alive(_session):
            if master != _session_master:
                raise SparkSetupError(f"a Spark session with master {_session_master!r} is already "
                                      f"running in this process; cannot start one with {master!r}")
            return _session
        check_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ["SPARK_HOME"] = str(spark_home())
        from pyspark.sql import SparkSession

        options = java_options()
        builder = (
            SparkSession.builder.master(master).appName(app_name)
            .config("spark.driver.extraJavaOptions", options)
            .config("spark.executor.extraJavaOptions", java_options(executor=True))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        )
        if not master.startswith("local"):  # executors of a cluster: find this project
            builder = builder.config("spark.executorEnv.PYTHONPATH", executor_python_path())
        for key, value in extra_conf().items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        _session, _session_master = session, master
        return session


@contextmanager
def session_setting(spark: SparkSession, key: str, value: str | int | None) -> Iterator[None]:
    """Queries started in the block see the Spark SQL setting ``key`` at ``value`` (``None``:
    the session's own). The session's setting is restored afterwards, unset if it was."""
    if value is None:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, str(value))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


def stop_spark() -> None:
    """Stop the shared session and let its JVM exit (waiting for it), e.g. so that it writes
    a class archive. The next :func:`spark_session` starts a new JVM."""
    global _session, _session_master
    from pyspark import SparkContext

    with _lock:
        if _session is not None:
            _session.stop()
        _session = _session_master = None
        gateway = SparkContext._gateway
        process = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
            SparkContext._gateway = None
            SparkContext._jvm = None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()  # PythonGatewayServer exits when its standard input closes
            process.wait(timeout=600)
