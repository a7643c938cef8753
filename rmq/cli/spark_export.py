"""`rmq spark-export`: messages of store directories or of a running cluster written as
Parquet, JSON, CSV or ORC files with Spark.

    rmq spark-export STORE_DIR... --out DIR [--format parquet|json|csv|orc] [--topic T]...
                     [--since TIME] [--until TIME] [--partition-by topic,date]
                     [--master local[*]|spark://HOST:PORT] [--conf KEY=VALUE]... [--overwrite]
    rmq spark-export -n NAMESRV --topic T --out DIR [--starting-offsets earliest|latest|JSON]
                     [--ending-offsets latest|JSON] ...
    rmq spark-export -n NAMESRV --topic T --follow --checkpoint DIR --out DIR [--trigger SECONDS]
                     [--max-offsets-per-trigger N] ...

With STORE_DIRs the export reads the store files (offline: the broker may be stopped, the
directories may be copies); without them it pulls from the brokers of the name server given
by -n (or $NAMESRV_ADDR, the profile, 127.0.0.1:9876).  The job itself is
`rmq.spark.export.run_export`, the same one `spark-submit rmq/spark/export.py` runs.
With --follow it is a Structured Streaming query into the files instead
(`rmq.spark.follow`): one `rmq: batch N: ...` line per micro-batch on stderr, Ctrl-C stops it
after the running batch (exit 130) and the same --checkpoint continues it.

The master is --master, else $RMQ_SPARK_MASTER, else the one Spark's own configuration
gives (spark.master in spark-defaults.conf or a --conf), else local[*]
(`rmq.spark.session`); --conf passes any Spark setting.

Output: the rows written per topic (`-o` as everywhere; json/yaml give one object with
`out`, `format`, `files`, `rows` and `topics`).  On stderr: the phases (starting Spark,
reading, writing, counting) as `rmq: ...` lines, or, when stderr is a terminal, a progress
bar showing the phase and the tasks of the running Spark stages; nothing of Spark's own log
(`rmq.spark.quiet`) unless --debug.  A failure is one line (`rmq.spark.failures`): what the
executors lack and how to give it when the cluster's setup is the cause.
pyspark (and pyarrow) are an optional extra, `spark`: without them the command says how to
install it and exits 1.  rmq is on no package index, so the hint names the source tree rmq
runs from (`pip install -e '<tree>[spark]'`), or says to do that in a clone.  They are
imported inside the command only.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from rmq.cli.errors import EXIT_INTERRUPTED, EXIT_USAGE, RmqError, option_value
from rmq.cli.inspect.group import BrokerNameOption
from rmq.cli.main import CliState, command_app
from rmq.cli.output import OutputFormat, OutputOption, render, resolve_output
from rmq.cli.settings import NamesrvOption, resolve_namesrv
from rmq.common.timeutil import parse_time

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from rmq.spark.access import ClientAccess
    from rmq.spark.job import ExportJob, ExportResult

FORMAT_CHOICES = ("parquet", "json", "csv", "orc")

app = command_app()


def _require_spark() -> None:
    try:
        for module in ("pyspark", "pyarrow"):
            importlib.import_module(module)
    except ImportError as exc:
        raise RmqError(
            f"Spark export needs {exc.name or 'pyspark'}, which is not installed",
            spark_install_hint(),
        ) from None


def spark_install_hint() -> str:
    """How to add the `spark` extra: from the source tree rmq runs from (an editable
    install, `make`'s .venv), else from a clone (rmq is on no package index)."""
    import rmq

    root = Path(rmq.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        return f"install rmq's spark extra: {sys.executable} -m pip install -e '{root}[spark]'"
    return (
        "install rmq's spark extra from a clone of rmq: pip install -e '.[spark]' in its "
        "top directory"
    )


def _check_store_dirs(store_dirs: list[Path]) -> None:
    from rmq.store.layout import StoreLayout

    for store_dir in store_dirs:
        refusal = StoreLayout.of(store_dir).not_a_store()
        if refusal is not None:
            raise RmqError(refusal, "give a broker's storePathRootDir", EXIT_USAGE)


@app.command("spark-export")
def spark_export(
    ctx: typer.Context,
    out: Annotated[
        str,
        typer.Option(
            "--out",
            metavar="DIR",
            click_type=click.Path(file_okay=False),
            help="Output directory (or Spark URI).",
        ),
    ],
    store_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[STORE_DIR]...",
            help="Store directories to read (offline). Without them: pull from -n (online).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            click_type=click.Choice(FORMAT_CHOICES, case_sensitive=False),
            help="File format.",
        ),
    ] = "parquet",
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC",
            help="Only these topics (repeat or comma-separate). Required online.",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="TIME",
            help="Messages stored at or after TIME: epoch ms, ISO 8601, or -DURATION before "
            "now (-1d, -6h, -1h30m).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="Messages stored before TIME (as --since).",
            show_default=False,
        ),
    ] = None,
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by",
            metavar="COLUMNS",
            help="Directory partitioning: topic, date, brokerName, queueId (comma-separated).",
            show_default=False,
        ),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            metavar="URL",
            help="Spark master: local[N], spark://HOST:PORT. Default: $RMQ_SPARK_MASTER, "
            "else spark.master of Spark's configuration, else local[*].",
            show_default=False,
        ),
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            metavar="KEY=VALUE",
            help="A Spark setting (repeat), e.g. spark.pyspark.python=/opt/rmq/bin/python.",
            show_default=False,
        ),
    ] = None,
    namesrv: NamesrvOption = None,
    starting_offsets: Annotated[
        str | None,
        typer.Option(
            "--starting-offsets",
            metavar="OFFSETS",
            help='Online: earliest (default), latest, or {"topic":{"broker":{"queueId":offset}}}.',
            show_default=False,
        ),
    ] = None,
    ending_offsets: Annotated[
        str | None,
        typer.Option(
            "--ending-offsets",
            metavar="OFFSETS",
            help="Online: latest (default) or JSON as --starting-offsets.",
            show_default=False,
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the output directory if it exists.")
    ] = False,
    max_partition_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-partition-bytes",
            min=1,
            metavar="BYTES",
            help="Offline: commitlog bytes per Spark task. Default: 134217728 (128 MiB).",
            show_default=False,
        ),
    ] = None,
    broker_name: BrokerNameOption = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Online: keep exporting new messages (a Spark stream) until Ctrl-C; "
            "needs --checkpoint.",
        ),
    ] = False,
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            metavar="DIR",
            help="--follow: Spark's checkpoint directory; the same one continues a stopped export.",
            show_default=False,
        ),
    ] = None,
    trigger: Annotated[
        float | None,
        typer.Option(
            "--trigger",
            min=0.0,
            metavar="SECONDS",
            help="--follow: look for new messages every SECONDS (0: as soon as a batch ends). "
            "Default: 5.",
            show_default=False,
        ),
    ] = None,
    max_offsets_per_trigger: Annotated[
        int | None,
        typer.Option(
            "--max-offsets-per-trigger",
            min=1,
            metavar="N",
            help="--follow: at most N messages per micro-batch.",
            show_default=False,
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Export messages to Parquet, JSON, CSV or ORC files with Spark.

    Offline, from store directories (the broker's storePathRootDir; copies or a stopped
    broker's files are fine), or online, from the brokers of a running cluster (-n, one
    Spark task per queue).  Rows are the message record of 'rmq consume' with body binary
    (CSV: body base64, keys and properties JSON).  Prints the rows written per topic.
    Needs pyspark: rmq's spark extra (pip install -e '.[spark]' in the rmq clone).  See
    docs/spark.md for clusters.
    """
    dirs = list(store_dirs or [])
    if dirs and namesrv is not None:
        raise click.UsageError("give store directories or -n/--namesrv, not both", ctx)
    job = _job(
        ctx,
        dirs,
        out=out,
        format=fmt.lower(),
        namesrv=None if dirs else resolve_namesrv(namesrv),
        topics=tuple(t.strip() for text in topics or [] for t in text.split(",") if t.strip()),
        since=option_value(parse_time, since, "--since"),
        until=option_value(parse_time, until, "--until"),
        starting_offsets=starting_offsets,
        ending_offsets=ending_offsets,
        partition_by=tuple(c.strip() for c in (partition_by or "").split(",") if c.strip()),
        overwrite=overwrite,
        max_partition_bytes=max_partition_bytes,
        broker_name=broker_name,
        follow=follow,
        checkpoint=checkpoint,
        trigger_seconds=trigger,
        max_offsets_per_trigger=max_offsets_per_trigger,
        access=None if dirs else _access(ctx),
    )
    spark_settings = _settings(ctx, settings or [])
    _check_store_dirs(dirs)
    if not follow and "://" not in out and Path(out).exists() and not overwrite:
        raise RmqError(f"{out} already exists", "pass --overwrite to replace it")
    _require_spark()
    state = ctx.find_object(CliState)
    result = _run(job, master, spark_settings, debug=state is not None and state.debug)
    if result is not None:
        _show(result, output)


def _access(ctx: typer.Context) -> ClientAccess:
    """The ACL keys and TLS the command resolved (flags, environment, profile), for the
    executors: they connect to the brokers themselves."""
    from rmq.cli.tlsoptions import client_tls_settings
    from rmq.client.credentials import default_credentials
    from rmq.spark.access import ClientAccess

    tls, ca = client_tls_settings(ctx.params.get("tls"), ctx.params.get("tls_ca"))
    credentials = default_credentials()
    if credentials is None:
        return ClientAccess(tls=tls, tls_ca=ca.value or None)
    return ClientAccess(
        credentials.access_key,
        credentials.secret_key,
        credentials.security_token,
        tls,
        ca.value or None,
    )


def _job(
    ctx: typer.Context, dirs: list[Path], access: ClientAccess | None, **fields: Any
) -> ExportJob:
    from rmq.spark.job import ExportJob

    if access is not None:
        fields["access"] = access
    try:
        return ExportJob(store_dirs=tuple(str(d) for d in dirs), **fields)
    except ValueError as exc:
        raise RmqError(str(exc), f"see '{ctx.command_path} --help'", EXIT_USAGE) from None


def _settings(ctx: typer.Context, texts: list[str]) -> dict[str, str]:
    from rmq.spark.job import parse_settings

    try:
        return parse_settings(texts)
    except ValueError as exc:
        raise RmqError(f"--conf: {exc}", f"see '{ctx.command_path} --help'", EXIT_USAGE) from None


def _run(
    job: ExportJob, master: str | None, settings: dict[str, str], *, debug: bool
) -> ExportResult | None:
    """Start Spark quietly (`rmq.spark.quiet`; all its logs with --debug) and run the job,
    its phases and tasks on a progress bar when stderr is a terminal, else as lines.  A
    followed export (`rmq.spark.follow`) reports each micro-batch as a line and returns
    nothing; Ctrl-C ends it after the running batch with exit status 130."""
    from rmq.cli.progress import Progress
    from rmq.spark.export import run_export
    from rmq.spark.failures import SparkJobError, explain
    from rmq.spark.quiet import QUIET_LEVEL, jvm_noise_filtered, quiet_conf
    from rmq.spark.session import build_session, resolve_master
    from rmq.spark.stages import watch_stages

    with Progress("starting Spark", unit="tasks", when=not job.follow) as bar:

        def progress(text: str) -> None:
            if bar.enabled:
                bar.describe(text)
            else:
                print(f"rmq: {text}", file=sys.stderr, flush=True)

        conf = {"spark.ui.showConsoleProgress": "false", **settings}
        if not debug:
            conf = quiet_conf(conf)

        def jvm_start() -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext() if debug else jvm_noise_filtered()

        try:
            with jvm_start():
                master = resolve_master(master, conf)  # may start the JVM
            # Outside the filter: on a terminal the bar draws only while stderr is the tty.
            progress(f"starting Spark ({master})")
            with jvm_start():
                spark = build_session(master, conf=conf)
        except Exception as exc:
            failure = explain(exc)
            raise RmqError(
                f"cannot start Spark: {failure.message}",
                failure.hint
                or "check that Java 17 or later is installed (JAVA_HOME) and the --master URL",
            ) from exc
        if not debug:
            spark.sparkContext.setLogLevel(QUIET_LEVEL)
        try:
            if job.follow:
                _follow(spark, job, progress)
                return None
            if not bar.enabled:
                return run_export(spark, job, progress)
            with watch_stages(spark, bar):
                return run_export(spark, job, progress)
        except SparkJobError as exc:
            raise RmqError(f"Spark export failed: {exc.message}", exc.hint) from exc


def _follow(spark: SparkSession, job: ExportJob, progress: Callable[[str], None]) -> None:
    from rmq.spark.follow import run_follow

    progress(f"following {', '.join(job.topics)} on {job.namesrv} into {job.out}")
    result = run_follow(spark, job, progress)
    progress(
        f"stopped after {result.batches} micro-batches ({result.rows} rows); run the same "
        f"command to continue from the checkpoint {job.checkpoint}"
    )
    raise typer.Exit(EXIT_INTERRUPTED if result.interrupted else 0)


def _show(result: ExportResult, output: OutputFormat | None) -> None:
    topics = [{"topic": topic, "rows": rows} for topic, rows in result.rows_by_topic.items()]
    if resolve_output(output) in (OutputFormat.TABLE, OutputFormat.WIDE):
        render(topics, columns=("topic", "rows"), output=output)
        print(f"{result.rows} rows in {result.files} {result.format} files under {result.out}")
        return
    summary = {
        "out": result.out,
        "format": result.format,
        "files": result.files,
        "rows": result.rows,
        "topics": topics,
    }
    render(summary, columns=tuple(summary), output=output)
