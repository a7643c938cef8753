"""rmq: Apache RocketMQ 4.x rebuilt in Python as one command-line toolchain."""

__version__ = "0.1.0"
