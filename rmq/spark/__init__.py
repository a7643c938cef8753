"""PySpark export of RocketMQ messages: the ``rocketmq`` data source and the export job.

* :mod:`.datasource`: ``format("rocketmq")`` (Spark 4 Python Data Source API);
* :mod:`.stream` / :mod:`.streamoffsets`: the streaming source and its offsets;
* :mod:`.sink`: ``df.write`` / ``df.writeStream`` of rows as messages;
* :mod:`.offline` / :mod:`.online`: planning and reading store directories / running clusters;
* :mod:`.schema`: the rows (the message record as Spark columns) and their Arrow batches;
* :mod:`.options`: reader options as scan bounds (no pyspark needed);
* :mod:`.job` / :mod:`.export`: the export job of ``rmq spark-export`` and ``spark-submit``;
  :mod:`.follow`: the same as a stream (``rmq spark-export --follow``);
* :mod:`.session`: the SparkSession: which master, loopback-bound when local;
* :mod:`.failures`: a failed job as one line (what the executors lack and how to give it);
* :mod:`.quiet` / :mod:`.stages`: the command line's quiet driver and its progress.

Everything but :mod:`.options`, :mod:`.streamoffsets`, :mod:`.job`, :mod:`.failures`,
:mod:`.quiet` and :mod:`.stages` imports pyspark; nothing here is imported by the command
line until a Spark command runs.
"""
