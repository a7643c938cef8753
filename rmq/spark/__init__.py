"""PySpark export of RocketMQ messages: the ``rocketmq`` data source and the export job.

* :mod:`.datasource`: ``format("rocketmq")`` (Spark 4 Python Data Source API), filter pushdown;
* :mod:`.offline` / :mod:`.online`: planning and reading store directories / running clusters;
* :mod:`.schema`: the rows (the message record as Spark columns) and their Arrow batches;
* :mod:`.options`: reader options and pushed filters as scan bounds (no pyspark needed);
* :mod:`.job` / :mod:`.export`: the export job of ``rmq spark-export`` and ``spark-submit``;
* :mod:`.session`: the local, loopback-bound SparkSession.

Everything but :mod:`.options` and :mod:`.job` imports pyspark; nothing here is imported by
the command line until a Spark command runs.
"""
