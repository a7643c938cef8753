"""PySpark export job and the `rocketmq` Spark data source."""
